// Messages between the fleet benchmark (parent) and its children: the control plane and the
// simulated-agent processes. Requests carry an id; each child answers every request once.
// Times that cross processes are monotonic milliseconds (monoMs): process.hrtime reads
// CLOCK_MONOTONIC, which is one clock for every process on the machine, so a time taken in
// the control plane and one taken in an agent process can be subtracted directly.
import type { SigningKey } from "@berth/protocol";

/** Milliseconds on the machine-wide monotonic clock, comparable across processes. */
export const monoMs = (): number => Number(process.hrtime.bigint()) / 1e6;

export interface Timing {
  count: number;
  totalMs: number;
  maxMs: number;
}

// ---- control-plane child ------------------------------------------------------------

export interface MemoryFigures {
  rssMb: number;
  heapUsedMb: number;
  heapTotalMb: number;
  externalMb: number;
  arrayBuffersMb: number;
}

export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

export interface IssueResult {
  /** [command_id, monoMs just before issue(), issue() duration in ms] */
  issued: [string, number, number][];
  errors: string[];
  /** Commands not issued because the deadline passed first. */
  skipped: number;
}

export interface QueryStats {
  /** Per statement (start of its SQL): time on the connection, send to result. */
  byStatement: Record<string, Timing>;
  /** Time spent waiting for a pool client (pool.connect / pool.query), all callers. */
  poolWait: Timing;
}

export interface ProfileSummary {
  file: string;
  sampledMs: number;
  busyMs: number;
  /** [label, ms] by self time, busiest first. */
  selfByFunction: [string, number][];
  selfByArea: [string, number][];
  /** Repo functions by inclusive time (synchronous part of each call). */
  inclusiveRepo: [string, number][];
}

export type CpRequest =
  | { type: "memory"; gc: boolean }
  | { type: "connected" }
  | { type: "issue"; organizationId: string; serverIds: string[]; ratePerSec: number; deadlineMs: number }
  | { type: "loop" }
  | { type: "queries" }
  | { type: "profile-start" }
  | { type: "profile-stop"; file: string }
  | { type: "close" };

export interface CpReplies {
  memory: MemoryFigures;
  connected: { count: number };
  issue: IssueResult;
  loop: LoopDelay;
  queries: QueryStats | null;
  "profile-start": null;
  "profile-stop": ProfileSummary;
  close: null;
}

export type CpEvent = { event: "ready"; port: number; pid: number };

// ---- agent children -----------------------------------------------------------------

export interface AgentStatus {
  total: number;
  /** Handshake finished (ready received) and the socket is still open. */
  held: number;
  connecting: number;
  notStarted: number;
  /** Gave up after the last retry without a ready. */
  failed: number;
  /** Links that closed after ready. */
  dropped: number;
  /** Connection attempts that ended before ready and were retried. */
  retries: number;
  closeCodes: Record<string, number>;
  nacks: Record<string, number>;
  handshakeMs: number[];
  pingsSent: number;
  pongs: number;
  statsSent: number;
  acks: number;
  commandsVerified: number;
  commandsRejected: number;
  /** Links this side closed because the control plane sent nothing for two heartbeat intervals. */
  deadLinks: number;
  rssMb: number;
  readyIds?: string[];
  /** With readyIds: the replica (index into the assigned ports) each of those agents is linked to. */
  readyReplicas?: number[];
  /** Held links per replica (index into the assigned ports); one entry with a single port. */
  heldByReplica?: number[];
}

/**
 * How simulated agents reconnect after a link drops. "none" (the default): a link that drops
 * after ready stays down, so "held" means connected throughout. "jitter": the real agent's
 * policy (apps/agent/src/link/backoff.ts createBackoff, full jitter). "immediate": at once after
 * the drop, then the same exponential ceilings without jitter after failed attempts. Either
 * way a close with 1012 (a draining replica) waits a uniform delay in [0, drainSpreadMs)
 * without escalating the backoff.
 */
export type ReconnectPolicy = "none" | "jitter" | "immediate";

/** What happened to reconnecting links since the last "herd-mark". */
export interface HerdReport {
  /** Links that dropped after ready since the mark. */
  dropped: number;
  /** monoMs of each such link's ready again. */
  backAt: number[];
  /** monoMs of each connection attempt (socket opened). */
  attemptAt: number[];
  /** monoMs of every handshake completed (ready). */
  readyAt: number[];
  /** Attempts that closed before ready, by close code (1006: refused, reset or no answer). */
  failedByCode: Record<string, number>;
  /** Socket errors of those attempts, by error code (ECONNREFUSED, ECONNRESET, ...). */
  errors: Record<string, number>;
  /** Links told by a 1012 close to come back after a uniform delay. */
  drainCloses: number;
  /** Still waiting or connecting when asked. */
  pending: number;
}

export interface BlastResult {
  agents: number;
  eventsSent: number;
  eventsAcked: number;
  /** Batches still unacknowledged when the drain gave up. */
  unacked: number;
  startedAt: number;
  stoppedAt: number;
  lastAckAt: number;
  /** Send to ack of each batch, ms. */
  batchAckMs: number[];
}

export type AgentRequest =
  /** Generate this process's key pairs; answers the public keys (raw, base64). */
  | { type: "keys"; count: number }
  | {
      type: "assign";
      port: number;
      /** Enrolled already (seeded in the database): the server of each key, in order. */
      serverIds: string[] | null;
      /** Or one enrolment token per key, to enrol over HTTP. */
      tokens: string[] | null;
      trustedKeys: SigningKey[];
      statsMs: number;
      /** Several replicas: agent i is homed on ports[i % ports.length] (round robin); `port` is then ignored. */
      ports?: number[];
    }
  | { type: "enroll"; concurrency: number }
  | { type: "connect"; ratePerSec: number; maxConnecting: number }
  | { type: "status"; readyIds: boolean }
  | { type: "blast"; agents: number; batchSize: number; window: number; durationMs: number }
  /** Replica ports; null marks one down (reconnects go round robin over the live ones, as a balancer would send them). */
  | { type: "replicas"; ports: (number | null)[] }
  | { type: "policy"; policy: ReconnectPolicy; drainSpreadMs: number }
  /** Starts a new herd record (see HerdReport). */
  | { type: "herd-mark" }
  | { type: "herd-report" }
  /** Agents homed on `replica` close their links and reconnect to it (its new port), ramped. */
  | { type: "rehome"; replica: number; port: number; ratePerSec: number; maxConnecting: number }
  | { type: "close" };

export interface AgentReplies {
  keys: { publicKeys: string[] };
  assign: null;
  enroll: { enrolled: number; failed: number; errors: string[]; ms: number };
  connect: null;
  status: AgentStatus;
  blast: BlastResult;
  replicas: null;
  policy: null;
  "herd-mark": null;
  "herd-report": HerdReport;
  rehome: { moving: number };
  close: null;
}

/** [command_id, monoMs when the frame arrived, monoMs when its signature was verified] */
export type VerifiedItem = [string, number, number];
export type AgentEvent = { event: "ready"; pid: number } | { event: "verified"; items: VerifiedItem[] };

// ---- envelope -----------------------------------------------------------------------

export interface RequestEnvelope<R> {
  id: number;
  request: R;
}
export type ReplyEnvelope = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: string };

/** Answers requests from the parent in a child process. */
export function serveRequests<R extends { type: string }>(handle: (request: R) => Promise<unknown>): void {
  // The parent went away (crashed or killed): nobody will ever stop this child otherwise.
  process.on("disconnect", () => process.exit(1));
  process.on("message", (message: RequestEnvelope<R>) => {
    handle(message.request).then(
      (result) => process.send?.({ id: message.id, ok: true, result: result ?? null } satisfies ReplyEnvelope),
      (err: unknown) =>
        process.send?.({ id: message.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) } satisfies ReplyEnvelope),
    );
  });
}
