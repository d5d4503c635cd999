// The control plane's end of the agent link: challenge/hello/ready, heartbeats, command
// delivery from the outbox, event ingestion with cumulative acks. One connection per
// server across all replicas: a newer connection takes over (LISTEN/NOTIFY tells the
// replica holding the old one to close it).
import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import type { WebSocket } from "ws";
import type pg from "pg";
import {
  AGENT_MESSAGE_TYPES,
  CLOSE_CODES,
  PROTOCOL_VERSIONS,
  encodeFrame,
  importPublicKey,
  nackFor,
  negotiateVersion,
  parseFrame,
  verifyChallenge,
  type Frame,
  type MessageType,
  type Payload,
  type SignedCommand,
} from "@berth/protocol";
import { listen, type PgListener } from "../../db/pg-listener.ts";
import { CANCEL_CHANNEL, COMMANDS_CHANNEL, type AgentCommands } from "./agent-commands.ts";
import type { EventIngest } from "./event-ingest.ts";

export const TAKEOVER_CHANNEL = "berth_agent_takeover";
const HANDSHAKE_TIMEOUT_MS = 10_000;
const SEEN_CHUNK = 100;

interface Connection {
  id: string;
  socket: WebSocket;
  serverId: string | null;
  version: number;
  lastFrameAt: number;
  /** Frames are handled one after another so acks and results keep their order. */
  queue: Promise<void>;
  /** Frame id -> command id of unanswered commands, so a nack of a command frame is recorded as a rejection. */
  sentCommands: Map<string, string>;
  /**
   * Commands sent (or about to be sent) on this connection and not yet answered: each goes
   * out once per connection (the agent answers it there; a new connection gets every command
   * still unanswered).
   */
  delivered: Set<string>;
  acceptedAt: number;
  /** Closed by the sweep (handshake too slow, heartbeats missed): nothing more to check. */
  dropping: boolean;
  /** The challenge this connection must sign. */
  nonce: string;
  /** Set when a batch could not be stored: nothing after it may be acknowledged. */
  broken: boolean;
  /** `ready` was sent: commands may go out (before it the agent refuses them). */
  ready: boolean;
}

export interface GatewayOptions {
  pool: pg.Pool;
  /** For last_seen_at, which a database crash may lose at no cost (lib/relaxed-pool.ts); defaults to pool. */
  relaxedPool?: pg.Pool;
  commands: AgentCommands;
  ingest: EventIngest;
  replicaId: string;
  heartbeatMs: number;
  /** How often unsent commands are looked for (a lost announcement); default 15 s. */
  outboxSweepMs?: number;
  log: { info(o: object, m: string): void; warn(o: object, m: string): void };
}

export async function createAgentGateway(opts: GatewayOptions) {
  const { pool } = opts;
  const relaxed = opts.relaxedPool ?? pool;
  const live = new Map<string, Connection>();
  const seen = new Set<string>();
  let shuttingDown = false;

  const listener: PgListener = await listen(
    pool,
    [COMMANDS_CHANNEL, TAKEOVER_CHANNEL, CANCEL_CHANNEL],
    (channel, payload) => {
      if (channel === CANCEL_CHANNEL) {
        const [serverId, commandId] = payload.split(":");
        const conn = serverId ? live.get(serverId) : undefined;
        if (conn && commandId) send(conn, "command.cancel", { command_id: commandId });
      } else if (channel === COMMANDS_CHANNEL) {
        // server_id:command_id; a command this replica sent when it was issued needs nothing.
        const [serverId, commandId] = payload.split(":");
        const conn = serverId ? live.get(serverId) : undefined;
        if (conn && !(commandId && conn.delivered.has(commandId))) void deliver(conn);
      } else if (channel === TAKEOVER_CHANNEL) {
        const [serverId, connectionId] = payload.split(":");
        const conn = serverId ? live.get(serverId) : undefined;
        // Not ready: its session is being recorded, and its own notice will settle who stays.
        if (conn?.ready && conn.id !== connectionId) void closeIfSuperseded(conn).catch((err) => opts.log.warn({ err }, "takeover check failed"));
      }
    },
    (msg, err) => opts.log.warn({ err }, msg),
  );

  // A command issued on this replica for an agent held here goes out at once, without the
  // NOTIFY round trip. Its id is marked delivered before the insert, so the NOTIFY (which may
  // arrive before the insert's reply) does not send it again. The NOTIFY still reaches every
  // replica, so one taking the agent over right now (its handshake may have read the outbox
  // before the command was in it) sends it.
  opts.commands.setDirectDelivery({
    reserve(serverId, commandId) {
      const conn = live.get(serverId);
      if (!conn?.ready) return null;
      conn.delivered.add(commandId);
      return (command) => {
        if (live.get(serverId) === conn) sendCommand(conn, command);
      };
    },
  });

  // One sweep over every connection rather than timers per connection (ten thousand agents
  // are ten thousand links): handshakes that take too long, and links gone silent for two
  // heartbeat intervals, which are dead whatever TCP thinks.
  const all = new Set<Connection>();
  const sweepTimer = setInterval(() => {
    const now = Date.now();
    for (const conn of all) {
      if (conn.dropping) continue;
      if (conn.serverId === null && now - conn.acceptedAt > HANDSHAKE_TIMEOUT_MS) {
        conn.dropping = true;
        close(conn, CLOSE_CODES.handshake_timeout, "handshake timed out");
      } else if (now - conn.lastFrameAt > 2 * opts.heartbeatMs) {
        conn.dropping = true;
        close(conn, CLOSE_CODES.heartbeat_timeout, "heartbeat timeout");
        setTimeout(() => conn.socket.terminate(), 1000).unref();
      }
    }
  }, Math.max(100, Math.floor(Math.min(opts.heartbeatMs, HANDSHAKE_TIMEOUT_MS) / 2)));
  sweepTimer.unref();

  // A command whose announcement was lost (its issuer crashed right after the insert, or
  // this replica's LISTEN connection was being re-established) is still pending and unsent:
  // the agents held here get theirs. Commands younger than a sweep are left to the NOTIFY.
  const outboxSweepMs = opts.outboxSweepMs ?? 15_000;
  const outboxTimer = setInterval(() => {
    void (async () => {
      const servers = await opts.commands.unsentServers(outboxSweepMs);
      for (const serverId of servers) {
        const conn = live.get(serverId);
        if (conn) await deliver(conn);
      }
    })().catch((err) => opts.log.warn({ err }, "outbox sweep failed"));
  }, outboxSweepMs);
  outboxTimer.unref();

  // last_seen_at is written for all live agents every few seconds, in statements of a
  // hundred rows that skip rows locked right now (a command being issued): liveness never
  // makes anything wait, and a skipped row is written next time. The statements of one round
  // are spread over most of the interval: ten thousand agents are a hundred statements, and
  // sent back to back they were a burst of WAL that the next durable commits (a command being
  // issued) had to flush, every round (bench:fleet's slowest dispatches came in those bursts).
  const seenIntervalMs = Math.min(5_000, opts.heartbeatMs);
  let seenRound: Promise<void> | null = null;
  let seenStopped = false;
  const seenTimer = setInterval(() => {
    if (seen.size === 0 || seenRound !== null) return;
    const ids = [...seen];
    seen.clear();
    const chunks = Math.ceil(ids.length / SEEN_CHUNK);
    const spacingMs = chunks > 1 ? Math.min(250, (seenIntervalMs * 0.8) / chunks) : 0;
    seenRound = (async () => {
      for (let i = 0; i < ids.length; i += SEEN_CHUNK) {
        if (i > 0 && spacingMs > 0) await delay(spacingMs, undefined, { ref: false });
        if (seenStopped) return;
        const chunk = ids.slice(i, i + SEEN_CHUNK);
        const { rows } = await relaxed.query<{ id: string }>(
          `update servers s set last_seen_at = now()
           from (select id from servers where id = any($1::uuid[]) for update skip locked) as l where s.id = l.id
           returning s.id`,
          [chunk],
        );
        if (rows.length < chunk.length) {
          const written = new Set(rows.map((r) => r.id));
          for (const id of chunk) if (!written.has(id)) seen.add(id);
        }
      }
    })()
      .catch((err) => opts.log.warn({ err }, "last_seen update failed"))
      .finally(() => {
        seenRound = null;
      });
  }, seenIntervalMs);
  seenTimer.unref();

  /**
   * A notice can arrive late (an older connection's, after a newer one registered here): the
   * session row, written before its notice, names the connection that stays.
   */
  async function closeIfSuperseded(conn: Connection) {
    const { rows } = await pool.query<{ connection_id: string }>("select connection_id from agent_sessions where server_id = $1", [conn.serverId]);
    if (rows[0]?.connection_id !== conn.id && live.get(conn.serverId!) === conn) {
      close(conn, CLOSE_CODES.replaced, "replaced by a newer connection");
    }
  }

  function send<T extends MessageType>(conn: Connection, type: T, payload: Payload<T>, id?: string) {
    if (conn.socket.readyState !== conn.socket.OPEN) return;
    conn.socket.send(encodeFrame(type, payload, { v: conn.version, ...(id ? { id } : {}) }));
  }

  function close(conn: Connection, code: number, reason: string) {
    try {
      conn.socket.close(code, reason);
    } catch {
      conn.socket.terminate();
    }
  }

  async function deliver(conn: Connection) {
    // A wake-up during the handshake waits for the delivery that follows `ready`.
    if (!conn.serverId || !conn.ready) return;
    const cmds = await opts.commands.deliverable(conn.serverId);
    for (const cmd of cmds) if (!conn.delivered.has(cmd.command_id)) sendCommand(conn, cmd);
  }

  /**
   * The agent answered the command and its state says so: it is no longer pending, so no
   * outbox read returns it again, and this connection forgets it (its sets then hold only
   * commands in flight, however long the link lives).
   */
  function settled(conn: Connection, commandId: string) {
    conn.delivered.delete(commandId);
    for (const [frameId, id] of conn.sentCommands) if (id === commandId) conn.sentCommands.delete(frameId);
  }

  function sendCommand(conn: Connection, cmd: SignedCommand) {
    conn.delivered.add(cmd.command_id);
    const frameId = randomUUID();
    conn.sentCommands.set(frameId, cmd.command_id);
    send(conn, "command", cmd, frameId);
  }

  async function onHello(conn: Connection, hello: Payload<"hello">) {
    const { rows } = await pool.query<{ agent_public_key: string | null; last_event_seq: string }>(
      `select s.agent_public_key, coalesce(st.last_event_seq, 0) as last_event_seq
       from servers s left join agent_streams st on st.server_id = s.id where s.id = $1 and s.deleted_at is null`,
      [hello.server_id],
    );
    const server = rows[0];
    const ok =
      !!server?.agent_public_key &&
      verifyChallenge(conn.nonce, hello.server_id, hello.challenge_signature, importPublicKey(server.agent_public_key));
    if (!ok) {
      send(conn, "nack", { ref_id: null, code: "auth_failed", message: "challenge signature did not verify for this server" });
      return close(conn, CLOSE_CODES.auth_failed, "authentication failed");
    }
    const version = negotiateVersion(PROTOCOL_VERSIONS, hello.protocol_versions);
    if (version === null) {
      send(conn, "nack", { ref_id: null, code: "no_common_version", message: `control plane speaks ${PROTOCOL_VERSIONS.join(", ")}` });
      return close(conn, CLOSE_CODES.no_common_version, "no common protocol version");
    }
    conn.serverId = hello.server_id;
    const previous = live.get(hello.server_id);
    live.set(hello.server_id, conn);
    if (previous && previous !== conn) close(previous, CLOSE_CODES.replaced, "replaced by a newer connection");
    // Session, online status and the takeover notice in one statement (one round trip).
    await pool.query(
      `with session as (
         insert into agent_sessions (server_id, replica_id, connection_id, connected_at) values ($1, $2, $3, now())
         on conflict (server_id) do update set replica_id = excluded.replica_id, connection_id = excluded.connection_id,
           connected_at = excluded.connected_at),
       online as (update servers set status = 'online', last_seen_at = now(), agent_version = $4 where id = $1)
       select pg_notify($5, $1::text || ':' || $3::text)`,
      [hello.server_id, opts.replicaId, conn.id, hello.agent_version, TAKEOVER_CHANNEL],
    );
    conn.version = version;
    send(conn, "ready", { protocol_version: version, heartbeat_ms: opts.heartbeatMs, resend_from: Number(server!.last_event_seq) + 1 });
    conn.ready = true;
    opts.log.info({ serverId: hello.server_id, agentVersion: hello.agent_version }, "agent connected");
    await deliver(conn);
  }

  function parse(conn: Connection, text: string): Frame | null {
    const handshaking = conn.serverId === null;
    const parsed = parseFrame(text, {
      versions: handshaking ? PROTOCOL_VERSIONS : [conn.version],
      accept: handshaking ? ["hello", "nack"] : AGENT_MESSAGE_TYPES,
    });
    if (parsed.ok) return parsed.frame as Frame;
    if (parsed.error.type !== "nack") send(conn, "nack", nackFor(parsed.error));
    return null;
  }

  function answerPing(conn: Connection, frame: Frame) {
    seen.add(conn.serverId!);
    send(conn, "pong", { ts: (frame.payload as Payload<"ping">).ts });
  }

  async function onFrame(conn: Connection, input: string | Frame) {
    if (conn.broken) return;
    const frame = typeof input === "string" ? parse(conn, input) : input;
    if (frame === null) return;
    switch (frame.type) {
      case "hello":
        return onHello(conn, frame.payload as Payload<"hello">);
      case "ping":
        return answerPing(conn, frame);
      case "command.accepted": {
        const { command_id } = frame.payload as Payload<"command.accepted">;
        await opts.commands.markAccepted(conn.serverId!, command_id);
        return settled(conn, command_id);
      }
      case "command.rejected": {
        const p = frame.payload as Payload<"command.rejected">;
        await opts.commands.markRejected(conn.serverId!, p.command_id, p.code, p.message);
        return settled(conn, p.command_id);
      }
      case "events": {
        const { events } = frame.payload as Payload<"events">;
        seen.add(conn.serverId!);
        let upTo: number;
        try {
          upTo = await opts.ingest.ingest(conn.serverId!, events);
        } catch (err) {
          // Acks are cumulative: acknowledging a later batch would cover this lost one.
          // Drop the link instead; the agent resends from its last ack on reconnect.
          conn.broken = true;
          close(conn, CLOSE_CODES.going_away, "could not store events");
          throw err;
        }
        return send(conn, "events.ack", { up_to_seq: upTo });
      }
      case "nack": {
        const p = frame.payload as Payload<"nack">;
        const commandId = p.ref_id ? conn.sentCommands.get(p.ref_id) : undefined;
        if (commandId) {
          await opts.commands.markRejected(conn.serverId!, commandId, p.code, p.message);
          settled(conn, commandId);
        }
        opts.log.warn({ serverId: conn.serverId, nack: p }, "agent refused a frame");
        return;
      }
      default:
        return;
    }
  }

  async function onClose(conn: Connection) {
    all.delete(conn);
    if (!conn.serverId || live.get(conn.serverId) !== conn) return;
    live.delete(conn.serverId);
    if (shuttingDown) return;
    await pool.query("delete from agent_sessions where server_id = $1 and connection_id = $2", [conn.serverId, conn.id]);
    await pool.query(
      "update servers set status = 'offline', last_seen_at = now() where id = $1 and not exists (select 1 from agent_sessions where server_id = $1)",
      [conn.serverId],
    );
    opts.log.info({ serverId: conn.serverId }, "agent disconnected");
  }

  return {
    /** Handler for the WebSocket route. */
    accept(socket: WebSocket) {
      const conn: Connection = {
        id: randomUUID(),
        socket,
        serverId: null,
        version: 1,
        lastFrameAt: Date.now(),
        queue: Promise.resolve(),
        sentCommands: new Map(),
        delivered: new Set(),
        acceptedAt: Date.now(),
        dropping: false,
        nonce: randomBytes(32).toString("base64"),
        broken: false,
        ready: false,
      };
      all.add(conn);
      socket.on("message", (data) => {
        // Liveness counts when a frame arrives, not when the queue gets to it: a slow
        // database must not make a healthy agent look dead.
        conn.lastFrameAt = Date.now();
        const text = data.toString();
        let input: string | Frame = text;
        if (conn.ready) {
          // After the handshake a frame is parsed on arrival, and a ping answered at once
          // rather than behind event batches waiting for their write.
          const frame = parse(conn, text);
          if (frame === null) return;
          if (frame.type === "ping") return answerPing(conn, frame);
          input = frame;
        }
        conn.queue = conn.queue.then(() => onFrame(conn, input)).catch((err) => opts.log.warn({ err, serverId: conn.serverId }, "agent frame failed"));
      });
      socket.on("close", () => {
        conn.queue = conn.queue.then(() => onClose(conn)).catch((err) => opts.log.warn({ err }, "agent close handling failed"));
      });
      socket.on("error", () => {});
      send(conn, "challenge", { nonce: conn.nonce, server_time: new Date().toISOString() });
    },

    /** The agent finished its handshake here: recorded online and ready for commands. */
    isConnected: (serverId: string) => live.get(serverId)?.ready === true,
    connectedCount: () => live.size,

    async close() {
      clearInterval(seenTimer);
      seenStopped = true;
      await seenRound;
      clearInterval(sweepTimer);
      clearInterval(outboxTimer);
      opts.commands.setDirectDelivery(null);
      await listener.close();
      const conns = [...live.values()];
      for (const conn of conns) close(conn, CLOSE_CODES.going_away, "control plane shutting down");
      await Promise.all(conns.map((c) => c.queue));
      await Promise.all(conns.map((c) => onClose(c)));
      shuttingDown = true;
    },
  };
}
export type AgentGateway = Awaited<ReturnType<typeof createAgentGateway>>;
