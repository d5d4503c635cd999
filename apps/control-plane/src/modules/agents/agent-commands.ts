// The command outbox. A command takes the server's next seq, is signed, and is written; then
// a NOTIFY (payload server_id:command_id) wakes whichever replica holds the agent, and the
// issuing replica sends it at once if that is itself.
//
// The NOTIFY is a statement of its own after the insert, not part of its transaction:
// PostgreSQL serialises the commits of notifying transactions under one database-wide lock,
// held through the WAL flush, so durable inserts that notify queue behind each other's
// flushes (measured at 10,000 agents: the insert's wait was mostly that lock and the flush).
// On the relaxed pool the NOTIFY's commit waits for no flush. Should it be lost (a crash
// between the two), the gateway's outbox sweep sends what is still unsent.
import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import type { CommandType, SignedCommand, UnsignedCommand } from "@berth/protocol";
import { agentCommands, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { notFound } from "../../lib/errors.ts";
import { notifyEach } from "../events/event-log.repo.ts";
import type { CommandSigner } from "./signing-keys.ts";

/** Payload server_id:command_id: a command was written (announce() below). */
export const COMMANDS_CHANNEL = "berth_agent_commands";
/** Payload server_id:command_id: tell the agent to stop a command it already took. */
export const CANCEL_CHANNEL = "berth_agent_cancel";
export const DEFAULT_COMMAND_TTL_MS = 15 * 60 * 1000;

export type AgentCommandRow = typeof agentCommands.$inferSelect;

export interface IssueInput {
  organizationId: string;
  serverId: string;
  type: CommandType;
  params: Record<string, unknown>;
  /** user:<id>, api_key:<id> or system:<what> — recorded for the audit trail. */
  issuedBy: string;
  deploymentId?: string | null;
  ttlMs?: number;
}

/** What the gateway offers issue(): sending at once to an agent this replica holds. */
export interface DirectDelivery {
  /**
   * Null unless this replica holds the server's agent. Otherwise the command id is taken
   * as this replica's to send (the NOTIFY of its insert then needs nothing here), and the
   * returned function sends it once it is stored.
   */
  reserve(serverId: string, commandId: string): ((command: SignedCommand) => void) | null;
}

export function createAgentCommands(deps: { db: Database; relaxedDb: Database; clock: Clock; signer: CommandSigner }) {
  let direct: DirectDelivery | null = null;

  // Announcements made while one is in flight go together in the next statement.
  let announcing: string[] = [];
  let flushing = false;
  function announce(payload: string) {
    announcing.push(payload);
    if (!flushing) void flush();
  }
  async function flush() {
    flushing = true;
    while (announcing.length > 0) {
      const payloads = announcing;
      announcing = [];
      await notifyEach(deps.relaxedDb.$client, COMMANDS_CHANNEL, payloads).catch(() => {});
    }
    flushing = false;
  }

  return {
    setDirectDelivery(d: DirectDelivery | null) {
      direct = d;
    },

    async issue(input: IssueInput): Promise<AgentCommandRow> {
      const now = deps.clock.now();
      const expiresAt = new Date(now.getTime() + (input.ttlMs ?? DEFAULT_COMMAND_TTL_MS));
      const sign = await deps.signer.prepare();
      // Two statements, no transaction: each holds a pooled connection for one round trip.
      // A seq taken by an insert that then fails is a gap, which nothing minds (the agent
      // tells commands apart by id and keeps the highest seq it saw). The seq's own commit
      // may be relaxed: the insert's durable commit flushes the WAL past it. Both are named
      // statements in plain SQL: this is the hottest write of the outbox, and building the
      // statements through the query builder cost more CPU than the rest of issuing.
      const { rows } = await deps.relaxedDb.$client.query<{ seq: string }>({
        name: "command-next-seq",
        text: "update servers set last_command_seq = last_command_seq + 1 where id = $1 and organization_id = $2 returning last_command_seq as seq",
        values: [input.serverId, input.organizationId],
      });
      if (rows.length === 0) throw notFound("Server");
      const commandId = randomUUID();
      const send = direct?.reserve(input.serverId, commandId) ?? null;
      const signed = sign({
        command_id: commandId,
        server_id: input.serverId,
        seq: Number(rows[0]!.seq),
        type: input.type,
        issued_at: now.toISOString(),
        expires_at: expiresAt.toISOString(),
        issued_by: input.issuedBy.startsWith("user:") ? input.issuedBy.slice(5) : null,
        params: input.params,
      } as unknown as UnsignedCommand);
      // Held here, it is recorded as sent with the insert and sent right after it.
      const row: AgentCommandRow = {
        commandId,
        serverId: input.serverId,
        seq: signed.seq,
        type: signed.type,
        signed,
        issuedBy: input.issuedBy,
        deploymentId: input.deploymentId ?? null,
        state: "pending",
        rejectionCode: null,
        result: null,
        error: null,
        createdAt: now,
        expiresAt,
        sentAt: send ? now : null,
        acceptedAt: null,
        completedAt: null,
      };
      await deps.db.$client.query({
        name: "command-insert",
        text: `insert into agent_commands (command_id, server_id, seq, type, signed, issued_by, deployment_id, created_at, expires_at, sent_at)
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        values: [commandId, row.serverId, row.seq, row.type, JSON.stringify(signed), row.issuedBy, row.deploymentId, now, expiresAt, row.sentAt],
      });
      // Should the agent have gone meanwhile, its next connection gets the command from the outbox.
      send?.(signed);
      // Every replica hears of it: one taking the agent over right now (its handshake may have
      // read the outbox before the insert) sends it.
      announce(`${input.serverId}:${commandId}`);
      return row;
    },

    async get(commandId: string): Promise<AgentCommandRow | undefined> {
      const [row] = await deps.db.select().from(agentCommands).where(eq(agentCommands.commandId, commandId));
      return row;
    },

    /**
     * Unanswered, unexpired commands of a server in seq order, recorded as sent (they are about
     * to be); expired ones are closed, never sent. One round trip.
     */
    async deliverable(serverId: string): Promise<SignedCommand[]> {
      const now = deps.clock.now();
      // Both updates read the snapshot from before either: the second tests expiry itself.
      const rows = await deps.relaxedDb.execute<{ signed: SignedCommand }>(sql`
        with expired as (
          update ${agentCommands} set state = 'expired', completed_at = ${now}
          where server_id = ${serverId} and state = 'pending' and expires_at <= ${now}),
        sent as (
          update ${agentCommands} set sent_at = coalesce(sent_at, ${now})
          where server_id = ${serverId} and state = 'pending' and expires_at > ${now}
          returning seq, signed)
        select signed from sent order by seq`);
      return rows.rows.map((r) => r.signed);
    },

    /** Servers with unexpired commands older than `ageMs` that were never sent. */
    async unsentServers(ageMs: number): Promise<string[]> {
      const now = deps.clock.now();
      const rows = await deps.relaxedDb.execute<{ server_id: string }>(sql`
        select distinct server_id from ${agentCommands}
        where state = 'pending' and sent_at is null and created_at < ${new Date(now.getTime() - ageMs)} and expires_at > ${now}`);
      return rows.rows.map((r) => r.server_id);
    },

    async markAccepted(serverId: string, commandId: string) {
      await deps.relaxedDb.$client.query({
        name: "command-accepted",
        text: "update agent_commands set state = 'accepted', accepted_at = $3 where command_id = $1 and server_id = $2 and state = 'pending'",
        values: [commandId, serverId, deps.clock.now()],
      });
    },

    async markRejected(serverId: string, commandId: string, code: string, message: string) {
      await deps.relaxedDb
        .update(agentCommands)
        .set({ state: "rejected", rejectionCode: code, error: { code, message }, completedAt: deps.clock.now() })
        .where(and(eq(agentCommands.commandId, commandId), eq(agentCommands.serverId, serverId), eq(agentCommands.state, "pending")));
    },
  };
}
export type AgentCommands = ReturnType<typeof createAgentCommands>;
