// The command outbox. A command is signed with the server's next seq and written in one
// transaction; its insert trigger's NOTIFY (payload server_id:command_id, at commit) wakes
// whichever replica holds the agent, and the issuing replica sends it at once if that is itself.
import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import type { CommandType, SignedCommand, UnsignedCommand } from "@berth/protocol";
import { agentCommands, servers, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { notFound } from "../../lib/errors.ts";
import type { CommandSigner } from "./signing-keys.ts";

/** Also named in the trigger of migration 0009, which sends on it. */
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

/** What the gateway offers issue(): whether it holds an agent, and sending to it at once. */
export interface DirectDelivery {
  holds(serverId: string): boolean;
  send(command: SignedCommand): void;
}

export function createAgentCommands(deps: { db: Database; relaxedDb: Database; clock: Clock; signer: CommandSigner }) {
  let direct: DirectDelivery | null = null;

  return {
    setDirectDelivery(d: DirectDelivery | null) {
      direct = d;
    },

    async issue(input: IssueInput): Promise<AgentCommandRow> {
      const now = deps.clock.now();
      const expiresAt = new Date(now.getTime() + (input.ttlMs ?? DEFAULT_COMMAND_TTL_MS));
      // The key is loaded before the transaction opens (see CommandSigner.prepare).
      const sign = await deps.signer.prepare();
      // Held here: this replica sends it right after the commit (recorded as sent with it).
      const sendHere = direct?.holds(input.serverId) === true;
      const row = await deps.db.transaction(async (tx) => {
        const [server] = await tx
          .update(servers)
          .set({ lastCommandSeq: sql`${servers.lastCommandSeq} + 1` })
          .where(and(eq(servers.id, input.serverId), eq(servers.organizationId, input.organizationId)))
          .returning({ seq: servers.lastCommandSeq });
        if (!server) throw notFound("Server");
        const userId = input.issuedBy.startsWith("user:") ? input.issuedBy.slice(5) : null;
        const unsigned = {
          command_id: randomUUID(),
          server_id: input.serverId,
          seq: server.seq,
          type: input.type,
          issued_at: now.toISOString(),
          expires_at: expiresAt.toISOString(),
          issued_by: userId,
          params: input.params,
        } as unknown as UnsignedCommand;
        const signed = sign(unsigned);
        // The insert's trigger announces the command to every replica at commit (migration 0009).
        const [inserted] = await tx
          .insert(agentCommands)
          .values({
            commandId: signed.command_id,
            serverId: input.serverId,
            seq: signed.seq,
            type: signed.type,
            signed,
            issuedBy: input.issuedBy,
            deploymentId: input.deploymentId ?? null,
            createdAt: now,
            expiresAt,
            sentAt: sendHere ? now : null,
          })
          .returning();
        return inserted!;
      });
      // Without waiting for the announcement; should the agent have gone meanwhile, its next
      // connection gets the command from the outbox.
      if (sendHere) direct?.send(row.signed as SignedCommand);
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

    async markAccepted(serverId: string, commandId: string) {
      await deps.relaxedDb
        .update(agentCommands)
        .set({ state: "accepted", acceptedAt: deps.clock.now() })
        .where(and(eq(agentCommands.commandId, commandId), eq(agentCommands.serverId, serverId), eq(agentCommands.state, "pending")));
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
