// The command outbox. A command takes the server's next seq, is signed, and is written; then
// a NOTIFY (payload server_id:command_id) wakes whichever replica holds the agent, and the
// issuing replica sends it at once if that is itself.
//
// The NOTIFY is a statement of its own after the insert, not part of its transaction:
// PostgreSQL serialises the commits of notifying transactions under one database-wide lock,
// held through the WAL flush, so durable inserts that notify queue behind each other's
// flushes (measured at 10,000 agents: the insert's wait was mostly that lock and the flush).
// On the relaxed pool the NOTIFY's commit waits for no flush. Should it be lost (a crash
// between the two), the gateway's outbox sweep sends what is still unsent. The statements
// are agent-commands.repo.ts's; the channels, channels.ts's.
//
// Nothing secret is written in clear: the signed command, exactly as the agent gets it, is
// stored sealed with the instance master key and opened each time it is sent (first send,
// resends after a reconnect), so its signature stays the one made at issue; beside it, in
// clear, only the parameters staff may see (shown-params.ts). Once the command leaves
// pending the database erases the sealed copy (agent-commands.repo.ts).
import { randomUUID } from "node:crypto";
import type { CommandParams, CommandType, SignedCommand, UnsignedCommand } from "@berth/protocol";
import type { Clock } from "../../lib/clock.ts";
import { notFound } from "../../lib/errors.ts";
import { open, seal } from "../../lib/master-key.ts";
import type { AgentCommandRow, AgentCommandsRepo, StoredCommand } from "./agent-commands.repo.ts";
import { shownParams } from "./shown-params.ts";
import type { CommandSigner } from "./signing-keys.ts";

export type { AgentCommandRow } from "./agent-commands.repo.ts";

export const DEFAULT_COMMAND_TTL_MS = 15 * 60 * 1000;

/**
 * A command to issue: `params` is its type's CommandParams<T> (packages/protocol), so a
 * parameter the agent would refuse (a wrong name, a wrong type, a missing field) does not
 * compile. One member per type (distributive), so type and params always go together.
 */
export type IssueInput<T extends CommandType = CommandType> = T extends CommandType ? TypedCommand<T> & IssueFields : never;

/** A command's type and its parameters; as a union over CommandType, one member per type. */
export type TypedCommand<T extends CommandType = CommandType> = T extends CommandType ? { type: T; params: CommandParams<T> } : never;

interface IssueFields {
  organizationId: string;
  serverId: string;
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

/** Announces each payload; those made while a statement is in flight go together in the next. */
function batched(announce: (payloads: string[]) => Promise<void>): (payload: string) => void {
  let announcing: string[] = [];
  let flushing = false;
  async function flush() {
    flushing = true;
    while (announcing.length > 0) {
      const payloads = announcing;
      announcing = [];
      await announce(payloads).catch(() => {});
    }
    flushing = false;
  }
  return (payload) => {
    announcing.push(payload);
    if (!flushing) void flush();
  };
}

/** The outbox row of a command just signed, sealed with `masterKey`; `sent`: it goes out with the insert (direct delivery). */
function pendingRow(signed: SignedCommand, masterKey: Buffer, input: IssueInput, createdAt: Date, expiresAt: Date, sent: boolean): AgentCommandRow {
  return {
    commandId: signed.command_id,
    serverId: input.serverId,
    seq: signed.seq,
    type: signed.type,
    signed: null,
    sealed: seal(masterKey, JSON.stringify(signed)),
    shownParams: shownParams(signed.type, signed.params),
    issuedBy: input.issuedBy,
    deploymentId: input.deploymentId ?? null,
    state: "pending",
    rejectionCode: null,
    result: null,
    error: null,
    createdAt,
    expiresAt,
    sentAt: sent ? createdAt : null,
    acceptedAt: null,
    completedAt: null,
  };
}

/** The command as it was signed: opened from its sealed form (a row older than sealing holds it in clear). */
export function storedCommand(masterKey: Buffer, row: StoredCommand): SignedCommand | null {
  if (row.sealed !== null) return JSON.parse(open(masterKey, row.sealed)) as SignedCommand;
  return row.signed;
}

export function createAgentCommands(deps: { repo: AgentCommandsRepo; clock: Clock; signer: CommandSigner; masterKey: Buffer }) {
  const { repo, masterKey } = deps;
  let direct: DirectDelivery | null = null;
  const announce = batched((payloads) => repo.announce(payloads));

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
      // may be relaxed: the insert's durable commit flushes the WAL past it.
      const seq = await repo.nextSeq(input.serverId, input.organizationId);
      if (seq === null) throw notFound("Server");
      const commandId = randomUUID();
      const send = direct?.reserve(input.serverId, commandId) ?? null;
      // type and params travel together (one member of the union), as the agent will check them.
      const { organizationId: _o, serverId: _s, issuedBy: _i, deploymentId: _d, ttlMs: _t, ...typed } = input;
      const unsigned: UnsignedCommand = {
        ...typed,
        command_id: commandId,
        server_id: input.serverId,
        seq,
        issued_at: now.toISOString(),
        expires_at: expiresAt.toISOString(),
        issued_by: input.issuedBy.startsWith("user:") ? input.issuedBy.slice(5) : null,
      };
      const signed = sign(unsigned);
      // Held here, it is recorded as sent with the insert and sent right after it.
      const row = pendingRow(signed, masterKey, input, now, expiresAt, send !== null);
      await repo.insert(row);
      // Should the agent have gone meanwhile, its next connection gets the command from the outbox.
      send?.(signed);
      // Every replica hears of it: one taking the agent over right now (its handshake may have
      // read the outbox before the insert) sends it.
      announce(`${input.serverId}:${commandId}`);
      return row;
    },

    get: (commandId: string) => repo.get(commandId),

    /**
     * Unanswered, unexpired commands of a server in seq order, recorded as sent (they are about
     * to be), each exactly as signed at issue; expired ones are closed, never sent. One round trip.
     */
    async deliverable(serverId: string): Promise<SignedCommand[]> {
      const rows = await repo.takeDeliverable(serverId, deps.clock.now());
      return rows.map((row) => storedCommand(masterKey, row)).filter((cmd) => cmd !== null);
    },

    /** Servers with unexpired commands older than `ageMs` that were never sent. */
    async unsentServers(ageMs: number): Promise<string[]> {
      const now = deps.clock.now();
      return repo.unsentServers(new Date(now.getTime() - ageMs), now);
    },

    markAccepted: (serverId: string, commandId: string) => repo.markAccepted(serverId, commandId, deps.clock.now()),

    markRejected: (serverId: string, commandId: string, code: string, message: string) =>
      repo.markRejected(serverId, commandId, code, message, deps.clock.now()),
  };
}
export type AgentCommands = ReturnType<typeof createAgentCommands>;
