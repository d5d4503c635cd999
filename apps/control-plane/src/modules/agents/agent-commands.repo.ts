// The command outbox as stored: agent_commands, each server's command seq, and the NOTIFY
// that announces new commands. The statements of issuing and answering a command are named
// plain SQL: they are the outbox's hottest, and building them through the query builder cost
// more CPU than the rest of issuing (bench:fleet). What a database crash may lose at no cost
// (the seq, which the durable insert's commit flushes past; sent, accepted and rejected
// marks; the NOTIFY) goes to the relaxed pool; the insert itself is durable.
//
// A command is stored sealed (`sealed`, agent-commands.ts seals and opens it) beside the
// parameters staff may see (`shown_params`); the database erases the sealed copy once the
// command leaves pending (trigger agent_commands_forget, migration 0025), as it is never
// sent again. `signed` is the clear form of rows written before that migration.
import { and, eq, sql } from "drizzle-orm";
import type { SignedCommand } from "@berth/protocol";
import { agentCommands, type Database } from "@berth/db";
import { notifyEach } from "../events/event-log.repo.ts";
import { COMMANDS_CHANNEL } from "./channels.ts";

export type AgentCommandRow = typeof agentCommands.$inferSelect;

/** An outbox row about to be sent: its sealed command, or the clear one of a row older than sealing. */
export type StoredCommand = {
  sealed: string | null;
  signed: SignedCommand | null;
};

export function createAgentCommandsRepo(deps: { db: Database; relaxedDb: Database }) {
  const { db, relaxedDb } = deps;
  return {
    /** Takes the server's next command seq; null when the organisation has no such server. */
    async nextSeq(serverId: string, organizationId: string): Promise<number | null> {
      const { rows } = await relaxedDb.$client.query<{ seq: string }>({
        name: "command-next-seq",
        text: "update servers set last_command_seq = last_command_seq + 1 where id = $1 and organization_id = $2 returning last_command_seq as seq",
        values: [serverId, organizationId],
      });
      return rows.length === 0 ? null : Number(rows[0]!.seq);
    },

    /** Writes a command (durably): its sealed form and shown parameters as given. */
    async insert(row: AgentCommandRow): Promise<void> {
      await db.$client.query({
        name: "command-insert-sealed",
        text: `insert into agent_commands (command_id, server_id, seq, type, sealed, shown_params, issued_by, deployment_id, created_at, expires_at, sent_at)
               values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
        values: [row.commandId, row.serverId, row.seq, row.type, row.sealed, JSON.stringify(row.shownParams), row.issuedBy, row.deploymentId, row.createdAt, row.expiresAt, row.sentAt],
      });
    },

    /** One NOTIFY on the commands channel per payload (server_id:command_id), in one statement. */
    announce: (payloads: string[]) => notifyEach(relaxedDb.$client, COMMANDS_CHANNEL, payloads),

    async get(commandId: string): Promise<AgentCommandRow | undefined> {
      const [row] = await db.select().from(agentCommands).where(eq(agentCommands.commandId, commandId));
      return row;
    },

    /**
     * A server's pending commands unexpired at `now`, in seq order, recorded as sent at `now`
     * unless they already were; those expired at `now` are closed. One round trip.
     */
    async takeDeliverable(serverId: string, now: Date): Promise<StoredCommand[]> {
      // Both updates read the snapshot from before either: the second tests expiry itself.
      const rows = await relaxedDb.execute<StoredCommand>(sql`
        with expired as (
          update ${agentCommands} set state = 'expired', completed_at = ${now}
          where server_id = ${serverId} and state = 'pending' and expires_at <= ${now}),
        sent as (
          update ${agentCommands} set sent_at = coalesce(sent_at, ${now})
          where server_id = ${serverId} and state = 'pending' and expires_at > ${now}
          returning seq, sealed, signed)
        select sealed, signed from sent order by seq`);
      return rows.rows;
    },

    /** Servers with pending commands created before `createdBefore`, unexpired at `now`, never sent. */
    async unsentServers(createdBefore: Date, now: Date): Promise<string[]> {
      const rows = await relaxedDb.execute<{ server_id: string }>(sql`
        select distinct server_id from ${agentCommands}
        where state = 'pending' and sent_at is null and created_at < ${createdBefore} and expires_at > ${now}`);
      return rows.rows.map((r) => r.server_id);
    },

    /** A pending command of the server becomes accepted; the seconds from its issue (null: it was not pending). */
    async markAccepted(serverId: string, commandId: string, at: Date): Promise<number | null> {
      const res = await relaxedDb.$client.query<{ seconds: number }>({
        name: "command-accepted",
        text: "update agent_commands set state = 'accepted', accepted_at = $3 where command_id = $1 and server_id = $2 and state = 'pending' returning extract(epoch from (accepted_at - created_at))::float8 as seconds",
        values: [commandId, serverId, at],
      });
      return res.rows[0]?.seconds ?? null;
    },

    /** A pending command of the server becomes rejected, with the agent's code and message. */
    async markRejected(serverId: string, commandId: string, code: string, message: string, at: Date): Promise<void> {
      await relaxedDb
        .update(agentCommands)
        .set({ state: "rejected", rejectionCode: code, error: { code, message }, completedAt: at })
        .where(and(eq(agentCommands.commandId, commandId), eq(agentCommands.serverId, serverId), eq(agentCommands.state, "pending")));
    },
  };
}
export type AgentCommandsRepo = ReturnType<typeof createAgentCommandsRepo>;
