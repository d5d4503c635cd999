// The control plane's end of the agent link: it accepts each agent's WebSocket and hands
// its frames, one after another, to the link's parts: the handshake (handshake.ts), command
// delivery and answers (delivery.ts), heartbeats and dead links (liveness.ts), and event
// batches into ingestion (events.ts). One connection per server across all replicas: a
// newer connection takes over (LISTEN/NOTIFY tells the replica holding the old one to close
// it). Its statements are link.repo.ts's; its channels, ../channels.ts's.
//
// What a link may cost (limits.ts): before its handshake ends, what admission.ts lets
// through (small frames, one hello, per address a few handshakes at once and a few hellos a
// minute); after it, a bounded queue of frames (frame-queue.ts) and a log budget per server
// (budgets.ts).
//
// A draining replica (lifecycle/drain.ts) first stops taking new links (the connect route
// answers 503), then hands the ones it holds over (handover.ts): each finishes the frames it
// has received, then is closed with 1012 so its agent reconnects to another replica.
import type { WebSocket } from "ws";
import type pg from "pg";
import { CLOSE_CODES, type Event, type Frame, type Payload, type StatsEvent } from "@berth/protocol";
import { retryWhileDatabaseUnavailable } from "../../../db/database-unavailable.ts";
import { listen, type PgListener } from "../../../db/pg-listener.ts";
import type { AgentCommands } from "../agent-commands.ts";
import { CANCEL_CHANNEL, COMMANDS_CHANNEL, TAKEOVER_CHANNEL } from "../channels.ts";
import type { EventIngest } from "../event-ingest.ts";
import { createAdmission, type Admission } from "./admission.ts";
import { createLogBudget } from "./budgets.ts";
import { close, newConnection, readFrame, type Connection } from "./connection.ts";
import { DEFAULT_OUTBOX_SWEEP_MS, createDelivery, type Delivery } from "./delivery.ts";
import { createEventIntake } from "./events.ts";
import { enqueue, type QueueStats } from "./frame-queue.ts";
import { createHandshake, type Handshake } from "./handshake.ts";
import { handOverLinks } from "./handover.ts";
import { linkLimits, type LinkLimits } from "./limits.ts";
import type { LinkRepo } from "./link.repo.ts";
import { createLiveness, type Liveness } from "./liveness.ts";

/** How long a session whose link ended during a database outage keeps being ended (the server offline) once the database answers again. */
const END_SESSION_RETRY_MS = 10 * 60_000;

export interface GatewayOptions {
  /** For LISTEN (a connection of its own, made from the pool's settings). */
  pool: pg.Pool;
  repo: LinkRepo;
  commands: AgentCommands;
  ingest: EventIngest;
  replicaId: string;
  heartbeatMs: number;
  /** How often unsent commands are looked for (a lost announcement); default 15 s. */
  outboxSweepMs?: number;
  /** What one server or address may cost; DEFAULT_LINK_LIMITS where not given. */
  limits?: Partial<LinkLimits>;
  /** Milliseconds, for the per-minute limits; default Date.now (the app passes its clock). */
  now?: () => number;
  log: { info(o: object, m: string): void; warn(o: object, m: string): void };
  /** Metrics: a command accepted (seconds since its issue), events stored from a link. */
  observe?: { commandAccepted(seconds: number): void; eventsIngested(events: readonly Event[], now: number): void; agentHandedOver?(): void };
}

/** What the gateway counted since it started, for its stats. */
interface Counters extends QueueStats {
  /** Hellos looked up in the database. */
  helloLookups: number;
  /** Log lines acknowledged but not stored (log budgets). */
  logLinesDropped: number;
}

/** The gateway's state and parts, shared by the frame and close handlers below. */
interface Link {
  live: Map<string, Connection>;
  all: Set<Connection>;
  /** The last host figures of each server whose agent is connected here. */
  latestStats: Map<string, StatsEvent>;
  repo: LinkRepo;
  admission: Admission;
  counters: Counters;
  handshake: Handshake;
  delivery: Delivery;
  liveness: Liveness;
  onEvents(conn: Connection, payload: Payload<"events">): Promise<void>;
  log: GatewayOptions["log"];
  shuttingDown: boolean;
}

export async function createAgentGateway(opts: GatewayOptions) {
  const live = new Map<string, Connection>();
  const all = new Set<Connection>();
  const limits = linkLimits(opts.limits);
  const now = opts.now ?? Date.now;
  const counters: Counters = { pauses: 0, peakQueued: 0, helloLookups: 0, logLinesDropped: 0 };
  const admission = createAdmission({ limits, now });
  const liveness = createLiveness({ all, repo: opts.repo, heartbeatMs: opts.heartbeatMs, log: opts.log });
  const delivery = createDelivery({
    commands: opts.commands,
    live,
    outboxSweepMs: opts.outboxSweepMs ?? DEFAULT_OUTBOX_SWEEP_MS,
    ...(opts.observe ? { accepted: opts.observe.commandAccepted } : {}),
    log: opts.log,
  });
  const handshake = createHandshake({
    repo: { ...opts.repo, helloServer: (id) => (counters.helloLookups++, opts.repo.helloServer(id)) },
    live,
    replicaId: opts.replicaId,
    heartbeatMs: opts.heartbeatMs,
    deliver: delivery.deliver,
    opened: (conn) => admission.opened(conn),
    log: opts.log,
  });
  const budget = createLogBudget({ linesPerMinute: limits.logLinesPerMinute, bytesPerMinute: limits.logBytesPerMinute, now });
  const latestStats = new Map<string, StatsEvent>();
  const stored = (serverId: string, events: readonly Event[]) => {
    opts.observe?.eventsIngested(events, Date.now());
    for (let i = events.length - 1; i >= 0; i--) {
      const e = events[i]!;
      if (e.kind !== "stats") continue;
      if (live.has(serverId)) latestStats.set(serverId, e);
      break;
    }
  };
  const onEvents = createEventIntake({
    ingest: opts.ingest,
    budget,
    seen: liveness.seen,
    dropped: (n) => (counters.logLinesDropped += n),
    stored,
    storeRetryMs: limits.storeRetryMs,
    log: opts.log,
  });
  const link: Link = { live, all, latestStats, repo: opts.repo, admission, counters, handshake, delivery, liveness, onEvents, log: opts.log, shuttingDown: false };

  const listener: PgListener = await listen(
    opts.pool,
    [COMMANDS_CHANNEL, TAKEOVER_CHANNEL, CANCEL_CHANNEL],
    (channel, payload) => {
      if (channel === CANCEL_CHANNEL) delivery.onCancelNotice(payload);
      else if (channel === COMMANDS_CHANNEL) delivery.onCommandNotice(payload);
      else if (channel === TAKEOVER_CHANNEL) handshake.onTakeoverNotice(payload);
    },
    (msg, err) => opts.log.warn({ err }, msg),
  );
  delivery.start();
  liveness.start();
  let accepting = true;

  return {
    /** Handler for the WebSocket route; `address` is the request's (request.ip). */
    accept(socket: WebSocket, address: string) {
      socket.on("error", () => {});
      if (!admission.admit(socket, address)) return;
      const conn = newConnection(socket, address);
      admission.begin(conn);
      all.add(conn);
      socket.on("message", (data: Buffer) => onMessage(link, conn, data));
      socket.on("close", () => {
        admission.ended(conn);
        enqueue(conn, () => onClose(link, conn), (err) => opts.log.warn({ err }, "agent close handling failed"), counters);
      });
      handshake.challenge(conn);
    },

    /** False once the replica drains: the connect route refuses new links with 503. */
    accepting: () => accepting,
    stopAccepting() {
      accepting = false;
    },

    /**
     * Drain: no new links from now on; every link held here finishes the frames already
     * received (stored and acknowledged) and is closed with 1012, spread over `windowMs`.
     * Resolves with how many links were handed over, once their sockets are closed.
     */
    async handOver(windowMs: number): Promise<number> {
      accepting = false;
      return handOverLinks([...all], windowMs, () => opts.observe?.agentHandedOver?.());
    },

    /** The agent finished its handshake here: recorded online and ready for commands. */
    isConnected: (serverId: string) => live.get(serverId)?.ready === true,
    connectedCount: () => live.size,
    /** The last host figures (stats event) of each server whose agent is connected here. */
    agentStats: (): Iterable<[string, StatsEvent]> => latestStats.entries(),
    /** What the links hold and what the limits did, on this replica (tests and diagnostics). */
    linkStats() {
      let queued = 0;
      let paused = 0;
      for (const conn of all) {
        queued += conn.queued;
        if (conn.socket.isPaused) paused++;
      }
      return { links: all.size, queued, paused, ...counters, ...admission.stats() };
    },

    async close() {
      await liveness.stop();
      delivery.stop();
      await listener.close();
      const conns = [...live.values()];
      for (const conn of conns) close(conn, CLOSE_CODES.going_away, "control plane shutting down");
      await Promise.all(conns.map((c) => c.queue));
      await Promise.all(conns.map((c) => onClose(link, c)));
      link.shuttingDown = true;
    },
  };
}
export type AgentGateway = Awaited<ReturnType<typeof createAgentGateway>>;

function onMessage(link: Link, conn: Connection, data: Buffer) {
  if (!link.admission.frameFits(conn, data.length)) return;
  // Liveness counts when a frame arrives, not when the queue gets to it: a slow
  // database must not make a healthy agent look dead.
  conn.lastFrameAt = Date.now();
  const text = data.toString();
  let input: string | Frame = text;
  if (conn.ready) {
    // After the handshake a frame is parsed on arrival, and a ping answered at once
    // rather than behind event batches waiting for their write.
    const frame = readFrame(conn, text);
    if (frame === null) return;
    if (frame.type === "ping") return link.liveness.answerPing(conn, frame);
    input = frame;
  }
  enqueue(conn, () => onFrame(link, conn, input), (err) => link.log.warn({ err, serverId: conn.serverId }, "agent frame failed"), link.counters);
}

async function onFrame(link: Link, conn: Connection, input: string | Frame) {
  if (conn.broken) return;
  const frame = typeof input === "string" ? readFrame(conn, input) : input;
  if (frame === null) return;
  switch (frame.type) {
    case "hello":
      if (!link.admission.hello(conn)) return;
      return link.handshake.onHello(conn, frame.payload as Payload<"hello">);
    case "ping":
      return link.liveness.answerPing(conn, frame);
    case "command.accepted":
      return link.delivery.onAccepted(conn, frame.payload as Payload<"command.accepted">);
    case "command.rejected":
      return link.delivery.onRejected(conn, frame.payload as Payload<"command.rejected">);
    case "events":
      return link.onEvents(conn, frame.payload as Payload<"events">);
    case "nack": {
      const p = frame.payload as Payload<"nack">;
      await link.delivery.onNack(conn, p);
      link.log.warn({ serverId: conn.serverId, nack: p }, "agent refused a frame");
      return;
    }
    default:
      return;
  }
}

async function onClose(link: Link, conn: Connection) {
  link.all.delete(conn);
  if (!conn.serverId || link.live.get(conn.serverId) !== conn) return;
  link.live.delete(conn.serverId);
  link.latestStats.delete(conn.serverId);
  if (link.shuttingDown) return;
  // A link that ends while PostgreSQL is unreachable would leave its session row naming a
  // connection that is gone until the agent is back: ended once the database answers again.
  const serverId = conn.serverId;
  await retryWhileDatabaseUnavailable(() => link.repo.endSession(serverId, conn.id), {
    forMs: END_SESSION_RETRY_MS,
    keepTrying: () => !link.shuttingDown,
  });
  link.log.info({ serverId }, "agent disconnected");
}
