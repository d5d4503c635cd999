// Commands from the outbox (../agent-commands.ts) to the agents this replica holds, and their
// answers back. A command goes out once per connection: when the link becomes ready (every
// command still unanswered), when its NOTIFY arrives, at once when issued on this replica
// (direct delivery), or by the outbox sweep should its announcement have been lost. The
// agent's accepted / rejected / nack settle it; a cancel announcement becomes command.cancel.
import { randomUUID } from "node:crypto";
import type { Payload, SignedCommand } from "@berth/protocol";
import { repeat, type Repeating } from "../../../lib/repeat.ts";
import type { AgentCommands, DirectDelivery } from "../agent-commands.ts";
import { send, type Connection } from "./connection.ts";

export const DEFAULT_OUTBOX_SWEEP_MS = 15_000;

export interface DeliveryOptions {
  commands: Pick<AgentCommands, "deliverable" | "unsentServers" | "markAccepted" | "markRejected" | "setDirectDelivery">;
  /** Server id -> the connection this replica holds for it. */
  live: Map<string, Connection>;
  /** How often unsent commands are looked for (a lost announcement). */
  outboxSweepMs: number;
  /** A command was accepted by its agent, this many seconds after its issue (metrics). */
  accepted?: (seconds: number) => void;
  log: { warn(o: object, m: string): void };
}

/** The server and command ids of a server_id:command_id payload, and the connection held here for that server. */
function target(live: Map<string, Connection>, payload: string) {
  const [serverId, commandId] = payload.split(":");
  return { conn: serverId ? live.get(serverId) : undefined, commandId };
}

function sendCommand(conn: Connection, cmd: SignedCommand) {
  conn.delivered.add(cmd.command_id);
  const frameId = randomUUID();
  conn.sentCommands.set(frameId, cmd.command_id);
  send(conn, "command", cmd, frameId);
}

/**
 * The agent answered the command and its state says so: it is no longer pending, so no
 * outbox read returns it again, and this connection forgets it (its sets then hold only
 * commands in flight, however long the link lives).
 */
function settled(conn: Connection, commandId: string) {
  conn.delivered.delete(commandId);
  for (const answered of conn.readsInFlight) answered.add(commandId);
  for (const [frameId, id] of conn.sentCommands) if (id === commandId) conn.sentCommands.delete(frameId);
}

/**
 * A command issued on this replica for an agent held here goes out at once, without the
 * NOTIFY round trip. Its id is marked delivered before the insert, so the NOTIFY (which may
 * arrive before the insert's reply) does not send it again. The NOTIFY still reaches every
 * replica, so one taking the agent over right now (its handshake may have read the outbox
 * before the command was in it) sends it.
 */
function directDelivery(live: Map<string, Connection>): DirectDelivery {
  return {
    reserve(serverId, commandId) {
      const conn = live.get(serverId);
      if (!conn?.ready) return null;
      conn.delivered.add(commandId);
      return (command) => {
        if (live.get(serverId) === conn) sendCommand(conn, command);
      };
    },
  };
}

export function createDelivery(opts: DeliveryOptions) {
  const { commands, live } = opts;
  let sweep: Repeating | null = null;

  async function deliver(conn: Connection) {
    // A wake-up during the handshake waits for the delivery that follows `ready`.
    if (!conn.serverId || !conn.ready) return;
    const answered = new Set<string>();
    conn.readsInFlight.add(answered);
    let cmds: SignedCommand[];
    try {
      cmds = await commands.deliverable(conn.serverId);
    } finally {
      conn.readsInFlight.delete(answered);
    }
    for (const cmd of cmds) if (!conn.delivered.has(cmd.command_id) && !answered.has(cmd.command_id)) sendCommand(conn, cmd);
  }

  // A command whose announcement was lost (its issuer crashed right after the insert, or
  // this replica's LISTEN connection was being re-established) is still pending and unsent:
  // the agents held here get theirs. Commands younger than a sweep are left to the NOTIFY.
  async function sweepOutbox() {
    const servers = await commands.unsentServers(opts.outboxSweepMs);
    for (const serverId of servers) {
      const conn = live.get(serverId);
      if (conn) await deliver(conn);
    }
  }

  return {
    deliver,

    /** A command was written (server_id:command_id); one this replica sent when it was issued needs nothing. */
    onCommandNotice(payload: string) {
      const { conn, commandId } = target(live, payload);
      // A read that fails (PostgreSQL restarting) must not end the process: the command stays
      // pending, and the outbox sweep or the agent's next connection delivers it.
      if (conn && !(commandId && conn.delivered.has(commandId))) {
        deliver(conn).catch((err: unknown) => opts.log.warn({ err, serverId: conn.serverId }, "command delivery deferred: the outbox could not be read"));
      }
    },

    /** A command the agent took is to stop (server_id:command_id). */
    onCancelNotice(payload: string) {
      const { conn, commandId } = target(live, payload);
      if (conn && commandId) send(conn, "command.cancel", { command_id: commandId });
    },

    async onAccepted(conn: Connection, { command_id }: Payload<"command.accepted">) {
      const seconds = await commands.markAccepted(conn.serverId!, command_id);
      if (seconds !== null) opts.accepted?.(seconds);
      settled(conn, command_id);
    },

    async onRejected(conn: Connection, p: Payload<"command.rejected">) {
      await commands.markRejected(conn.serverId!, p.command_id, p.code, p.message);
      settled(conn, p.command_id);
    },

    /** The agent refused a frame: if it was a command, the command is rejected. */
    async onNack(conn: Connection, p: Payload<"nack">) {
      const commandId = p.ref_id ? conn.sentCommands.get(p.ref_id) : undefined;
      if (commandId) {
        await commands.markRejected(conn.serverId!, commandId, p.code, p.message);
        settled(conn, commandId);
      }
    },

    /** Starts direct delivery and the outbox sweep. */
    start() {
      commands.setDirectDelivery(directDelivery(live));
      sweep = repeat(sweepOutbox, { everyMs: opts.outboxSweepMs, onError: (err) => opts.log.warn({ err }, "outbox sweep failed") });
    },

    stop() {
      sweep?.stop();
      commands.setDirectDelivery(null);
    },
  };
}
export type Delivery = ReturnType<typeof createDelivery>;
