// Many simulated agents in one process, each with its own Ed25519 key and its own WebSocket,
// speaking the link with the protocol package's helpers (parseFrame, encodeFrame,
// signChallenge, verifyCommand). Deliberately lighter than test/support/sim-agent.ts: no
// per-agent timers or promises. One 100 ms wheel drives every agent's ping (each
// heartbeat_ms) and stats event (every statsMs, from a random phase, so the fleet's stats
// are spread evenly). Like the real agent (apps/agent/src/link): one events batch in flight,
// events made meanwhile wait and leave together after the ack; a link with no frame from the
// control plane for two heartbeat intervals is closed as dead (4003). A link that closes
// after `ready` is counted as dropped and not reopened, so "held" means connected throughout
// (the real agent would reconnect, adding handshakes to an overloaded control plane).
//
// Replicas: with several ports assigned, agent i is homed on ports[i % ports.length]. Once a
// reconnect policy is set ("policy", see ReconnectPolicy in ipc.ts), a dropped link comes
// back: after the real agent's backoff (createBackoff from apps/agent/src/link/backoff.ts, the
// same function, reset after a link stable for 10 s as link.ts does), or at once; a 1012 close
// (a draining replica) waits a uniform delay in [0, drainSpreadMs) and leaves the backoff as it
// was. Reconnects go round robin over the replicas not marked down ("replicas"), as a balancer
// in front of them would send them. "herd-mark" / "herd-report" record the reconnects.
//
// Started by fleet.bench.ts with fork (IPC); driven by AgentRequest messages (ipc.ts).
import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { createBackoff, type Backoff } from "../../../apps/agent/src/link/backoff.ts";
import WebSocket, { type RawData } from "ws";
import {
  AGENT_CONNECT_PATH,
  AGENT_ENROLL_PATH,
  CLOSE_CODES,
  CONTROL_PLANE_MESSAGE_TYPES,
  MAX_EVENTS_PER_BATCH,
  PROTOCOL_VERSIONS,
  encodeFrame,
  importPublicKey,
  parseFrame,
  signChallenge,
  verifyCommand,
  type EnrollResponse,
  type Event,
  type MessageType,
  type Payload,
  type SignedCommand,
  type SigningKey,
} from "@berth/protocol";
import {
  monoMs,
  serveRequests,
  type AgentEvent,
  type AgentReplies,
  type AgentRequest,
  type AgentStatus,
  type BlastResult,
  type HerdReport,
  type ReconnectPolicy,
  type VerifiedItem,
} from "./ipc.ts";

if (!process.send) throw new Error("agent-process.ts is started by fleet.bench.ts (fork with IPC)");

const TICK_MS = 100;
/** Length of the DER header before the 32 raw key bytes of an Ed25519 SubjectPublicKeyInfo. */
const SPKI_PREFIX_BYTES = 12;
const MAX_ATTEMPTS = 5;
const AGENT_VERSION = "fleet-sim-1.0.0";
/** The real agent's link resets its backoff after a connection up this long (link.ts stableAfterMs). */
const STABLE_AFTER_MS = 10_000;
/** Close code of a draining replica: come back after a uniform delay, backoff unchanged. */
const DRAINING = 1012;
/** An attempt whose WebSocket upgrade does not finish in this long is closed (1006) and retried. */
const HANDSHAKE_TIMEOUT_MS = 15_000;

interface Blast {
  active: boolean;
  startSeq: number;
  sent: number;
}

interface Agent {
  serverId: string;
  token: string | null;
  key: KeyObject;
  publicKey: string;
  ws: WebSocket | null;
  state: "idle" | "connecting" | "ready" | "dropped" | "failed";
  version: number;
  nextSeq: number;
  ackedUpTo: number;
  /** Events frames not acknowledged yet: [highest seq, monoMs sent]. */
  outstanding: [number, number][];
  /** Events made while a batch was in flight (the real agent's journal). */
  journal: Event[];
  /** monoMs of the last frame from the control plane. */
  lastFrameAt: number;
  attempts: number;
  startedAt: number;
  blast: Blast | null;
  /** Replica index this agent is homed on (round robin), and the one its link goes to. */
  home?: number;
  replica?: number;
  /** The real agent's reconnect backoff, made at the first drop. */
  backoff?: Backoff;
  /** monoMs of the last ready, and of the drop being recovered from (0: none). */
  readyAt?: number;
  droppedAt?: number;
  /** Already on the ping and stats wheels (a reconnect must not add it twice). */
  onWheel?: boolean;
  /** A reconnect is scheduled (its timer). */
  retry?: NodeJS.Timeout | null;
}

let agents: Agent[] = [];
/** Replica ports by index; null: marked down. */
let ports: (number | null)[] = [];
let policy: ReconnectPolicy = "none";
let drainSpreadMs = 5000;
let liveCursor = 0;
const newHerd = (): HerdReport => ({ dropped: 0, backAt: [], attemptAt: [], readyAt: [], failedByCode: {}, errors: {}, drainCloses: 0, pending: 0 });
let herd: HerdReport = newHerd();
/** The no-jitter policy's retries: the same exponential ceilings, each drawn at its top. */
const noJitter = () => 1 - 1e-9;
let statsMs = 10_000;
let trustedKeys = new Map<string, KeyObject>();
/** Command ids already answered: the real agent's journal, shared (ids are unique anyway). */
const journal = new Map<string, "accepted" | "rejected">();

const counters = { retries: 0, pingsSent: 0, pongs: 0, statsSent: 0, acks: 0, verified: 0, rejected: 0, deadLinks: 0 };
const closeCodes: Record<string, number> = {};
const nacks: Record<string, number> = {};
const handshakeMs: number[] = [];
let verifiedBuffer: VerifiedItem[] = [];
const batchAckMs: number[] = [];

const emit = (event: AgentEvent) => process.send!(event);

// Verified commands go to the parent in small batches, not one IPC message each.
setInterval(() => {
  if (verifiedBuffer.length === 0) return;
  const items = verifiedBuffer;
  verifiedBuffer = [];
  emit({ event: "verified", items });
}, 100).unref();

function send<T extends MessageType>(a: Agent, type: T, payload: Payload<T>) {
  if (a.ws?.readyState !== WebSocket.OPEN) return;
  a.ws.send(encodeFrame(type, payload, { v: a.version }));
}

function sendEvents(a: Agent, events: Event[]) {
  if (a.ws?.readyState !== WebSocket.OPEN) return;
  a.outstanding.push([events[events.length - 1]!.seq, monoMs()]);
  a.ws.send(encodeFrame("events", { events }, { v: a.version }));
}

// ---- the wheel: pings and stats ------------------------------------------------------

let pingSlots = 150;
let heartbeatMs = 15_000;
const statsSlots = () => Math.max(1, Math.round(statsMs / TICK_MS));
let pingWheel: Agent[][] = [];
let statsWheel: Agent[][] = [];
let tick = 0;
let wheelStart = 0;

function startWheel(intervalMs: number) {
  heartbeatMs = intervalMs;
  pingSlots = Math.max(1, Math.round(heartbeatMs / TICK_MS));
  pingWheel = Array.from({ length: pingSlots }, () => []);
  statsWheel = Array.from({ length: statsSlots() }, () => []);
  wheelStart = performance.now();
  setInterval(() => {
    // Catch up on ticks a busy event loop delayed, so no agent misses its ping.
    const due = Math.floor((performance.now() - wheelStart) / TICK_MS);
    while (tick < due) runTick(tick++);
  }, TICK_MS).unref();
}

function runTick(t: number) {
  const now = monoMs();
  for (const a of pingWheel[t % pingSlots]!) {
    if (a.state !== "ready") continue;
    if (now - a.lastFrameAt >= 2 * heartbeatMs) {
      counters.deadLinks++;
      a.ws?.close(CLOSE_CODES.heartbeat_timeout, "no frame for two heartbeat intervals");
      continue;
    }
    send(a, "ping", { ts: new Date().toISOString() });
    counters.pingsSent++;
  }
  for (const a of statsWheel[t % statsWheel.length]!) {
    if (a.state !== "ready" || a.blast?.active) continue;
    a.journal.push(statsEvent(a.nextSeq++));
    counters.statsSent++;
    flush(a);
  }
}

/** Sends what the journal holds when no batch is in flight (window 1, as the real agent). */
function flush(a: Agent) {
  if (a.outstanding.length > 0 || a.journal.length === 0) return;
  sendEvents(a, a.journal.splice(0, MAX_EVENTS_PER_BATCH));
}

function statsEvent(seq: number): Event {
  const load = Math.random() * 4;
  return {
    seq,
    ts: new Date().toISOString(),
    kind: "stats",
    cpu_percent: Math.round(Math.random() * 1000) / 10,
    ram_used_mb: 8000 + Math.round(Math.random() * 8000),
    ram_total_mb: 32768,
    disk_used_gb: 120 + Math.random() * 10,
    disk_total_gb: 500,
    load1: load,
    load5: load * 0.9,
    load15: load * 0.8,
    containers_running: 4,
    containers_total: 5,
  };
}

// ---- one link ------------------------------------------------------------------------

function connect(a: Agent) {
  inHandshake++;
  a.state = "connecting";
  a.attempts++;
  a.startedAt = monoMs();
  a.retry = null;
  if (policy !== "none") herd.attemptAt.push(a.startedAt);
  const target = ports[a.replica ?? 0] ?? 0;
  const ws = new WebSocket(`ws://127.0.0.1:${target}${AGENT_CONNECT_PATH}`, { perMessageDeflate: false, handshakeTimeout: HANDSHAKE_TIMEOUT_MS });
  a.ws = ws;
  a.version = PROTOCOL_VERSIONS[0]!;
  ws.on("message", (data: RawData) => onMessage(a, ws, data));
  ws.on("close", (code: number) => onClose(a, ws, code));
  ws.on("error", (err: Error & { code?: string }) => {
    if (policy !== "none" && a.state === "connecting") herd.errors[err.code ?? err.message] = (herd.errors[err.code ?? err.message] ?? 0) + 1;
  });
}

/** A live replica for a reconnect: the agent's own if it is up, else round robin over the live ones. */
function pickReplica(a: Agent): number {
  const own = a.replica ?? 0;
  if (ports[own] != null) return own;
  const live = ports.flatMap((p, i) => (p == null ? [] : [i]));
  if (live.length === 0) return own;
  return live[liveCursor++ % live.length]!;
}

/** Schedules the reconnect of a link that closed, by the policy (see the header). */
function reconnect(a: Agent, code: number, wasReady: boolean) {
  const now = monoMs();
  a.backoff ??= createBackoff(policy === "immediate" ? { random: noJitter } : {});
  if (wasReady) {
    herd.dropped++;
    a.droppedAt = now;
    if (a.readyAt !== undefined && now - a.readyAt >= STABLE_AFTER_MS) a.backoff.reset();
  } else {
    herd.failedByCode[code] = (herd.failedByCode[code] ?? 0) + 1;
  }
  let delay: number;
  if (code === DRAINING) {
    herd.drainCloses++;
    delay = Math.floor(Math.random() * drainSpreadMs);
  } else if (policy === "immediate" && wasReady) {
    delay = 0;
  } else {
    delay = a.backoff.next();
  }
  a.state = "idle";
  a.replica = pickReplica(a);
  a.retry = setTimeout(() => {
    a.replica = pickReplica(a);
    connect(a);
  }, delay);
}

function onClose(a: Agent, ws: WebSocket, code: number) {
  if (a.ws !== ws) return;
  closeCodes[code] = (closeCodes[code] ?? 0) + 1;
  a.ws = null;
  if (a.state === "connecting") inHandshake--;
  if (policy !== "none" && (a.state === "ready" || a.state === "connecting")) {
    // The real agent stops for good when another connection took its identity over.
    if (code === CLOSE_CODES.replaced) {
      a.state = "dropped";
      return;
    }
    reconnect(a, code, a.state === "ready");
    return;
  }
  if (a.state === "ready") {
    a.state = "dropped";
    return;
  }
  if (a.state !== "connecting") return;
  if (a.attempts >= MAX_ATTEMPTS) {
    a.state = "failed";
    return;
  }
  // Capped, jittered backoff, as the real agent does (shorter, to fit a benchmark).
  counters.retries++;
  a.state = "idle";
  setTimeout(() => connect(a), 1000 + Math.random() * 2000 * a.attempts);
}

function onMessage(a: Agent, ws: WebSocket, data: RawData) {
  const arrivedAt = monoMs();
  a.lastFrameAt = arrivedAt;
  const parsed = parseFrame(data.toString(), {
    versions: a.state === "ready" ? [a.version] : PROTOCOL_VERSIONS,
    accept: CONTROL_PLANE_MESSAGE_TYPES,
  });
  if (!parsed.ok) {
    nacks[`sent:${parsed.error.code}`] = (nacks[`sent:${parsed.error.code}`] ?? 0) + 1;
    return;
  }
  const f = parsed.frame;
  switch (f.type) {
    case "challenge": {
      const { nonce } = f.payload as Payload<"challenge">;
      ws.send(
        encodeFrame("hello", {
          server_id: a.serverId,
          agent_version: AGENT_VERSION,
          protocol_versions: [...PROTOCOL_VERSIONS],
          capabilities: ["diagnostics"],
          last_command_seq: 0,
          next_event_seq: a.nextSeq,
          challenge_signature: signChallenge(nonce, a.serverId, a.key),
        }),
      );
      return;
    }
    case "ready": {
      const ready = f.payload as Payload<"ready">;
      inHandshake--;
      a.state = "ready";
      a.version = ready.protocol_version;
      a.nextSeq = Math.max(a.nextSeq, ready.resend_from);
      a.readyAt = arrivedAt;
      if (policy !== "none") {
        herd.readyAt.push(arrivedAt);
        if (a.droppedAt) {
          herd.backAt.push(arrivedAt);
          a.droppedAt = 0;
        }
        // Batches in flight on the old link are not acknowledged now; stats are not resent.
        a.outstanding = [];
      } else {
        handshakeMs.push(arrivedAt - a.startedAt);
      }
      if (pingWheel.length === 0) startWheel(ready.heartbeat_ms);
      if (a.onWheel) return;
      a.onWheel = true;
      // First ping one heartbeat after ready; first stats at a random point of the period.
      pingWheel[tick % pingSlots]!.push(a);
      statsWheel[Math.floor(Math.random() * statsWheel.length)]!.push(a);
      return;
    }
    case "pong":
      counters.pongs++;
      return;
    case "events.ack":
      onAck(a, (f.payload as Payload<"events.ack">).up_to_seq, arrivedAt);
      return;
    case "command":
      onCommand(a, f.payload as SignedCommand, arrivedAt);
      return;
    case "nack": {
      const code = (f.payload as Payload<"nack">).code;
      nacks[code] = (nacks[code] ?? 0) + 1;
      return;
    }
    default:
      return;
  }
}

function onAck(a: Agent, upTo: number, at: number) {
  counters.acks++;
  if (upTo > a.ackedUpTo) a.ackedUpTo = upTo;
  while (a.outstanding.length > 0 && a.outstanding[0]![0] <= upTo) {
    const [top, sentAt] = a.outstanding.shift()!;
    if (a.blast && top >= a.blast.startSeq) {
      batchAckMs.push(at - sentAt);
      lastAckAt = at;
    }
  }
  if (a.blast?.active) pump(a);
  else if (!a.blast) flush(a);
}

function onCommand(a: Agent, cmd: SignedCommand, arrivedAt: number) {
  // The journal first: a redelivered command gets the answer it got before and never runs again.
  const known = journal.get(cmd.command_id);
  if (known === "accepted") return send(a, "command.accepted", { command_id: cmd.command_id, seq: cmd.seq });
  const verdict = verifyCommand(cmd, {
    trustedKeys,
    serverId: a.serverId,
    now: new Date(),
    seenCommandIds: (id) => journal.has(id),
  });
  const verifiedAt = monoMs();
  if (!verdict.ok) {
    journal.set(cmd.command_id, "rejected");
    counters.rejected++;
    return send(a, "command.rejected", { command_id: cmd.command_id, code: verdict.code, message: verdict.message });
  }
  journal.set(cmd.command_id, "accepted");
  counters.verified++;
  verifiedBuffer.push([cmd.command_id, arrivedAt, verifiedAt]);
  send(a, "command.accepted", { command_id: cmd.command_id, seq: cmd.seq });
}

// ---- the log blast ---------------------------------------------------------------------

let blastBatch = 500;
let blastWindow = 1;
let lastAckAt = 0;
const PADDING = "GET /web/dataset/call_kw/sale.order/read 200 - 12.3 ms - worker 4 - ";

function pump(a: Agent) {
  const blast = a.blast!;
  let inFlight = 0;
  for (const [top] of a.outstanding) if (top >= blast.startSeq) inFlight++;
  while (blast.active && inFlight < blastWindow && a.ws?.readyState === WebSocket.OPEN) {
    const ts = new Date().toISOString();
    const events: Event[] = [];
    for (let i = 0; i < blastBatch; i++) {
      const seq = a.nextSeq++;
      events.push({ seq, ts, kind: "log", command_id: null, deployment_id: null, level: "info", message: `${PADDING}line ${seq}`, step: null });
    }
    sendEvents(a, events);
    blast.sent += blastBatch;
    inFlight++;
  }
}

async function blast(count: number, batchSize: number, window: number, durationMs: number): Promise<BlastResult> {
  blastBatch = batchSize;
  blastWindow = window;
  batchAckMs.length = 0;
  const chosen = agents.filter((a) => a.state === "ready").slice(0, count);
  for (const a of chosen) a.blast = { active: true, startSeq: a.nextSeq, sent: 0 };
  const startedAt = monoMs();
  lastAckAt = startedAt;
  for (const a of chosen) pump(a);
  await new Promise((r) => setTimeout(r, durationMs));
  const stoppedAt = monoMs();
  for (const a of chosen) a.blast!.active = false;
  // Drain: wait for the acks of batches already sent (up to 15 s).
  const unacked = () => chosen.reduce((n, a) => n + a.outstanding.filter(([top]) => top >= a.blast!.startSeq).length, 0);
  const drainUntil = monoMs() + 15_000;
  while (unacked() > 0 && monoMs() < drainUntil) await new Promise((r) => setTimeout(r, 20));
  const result: BlastResult = {
    agents: chosen.length,
    eventsSent: chosen.reduce((n, a) => n + a.blast!.sent, 0),
    // Only the blast's own seqs: a stats event sent during the drain may be acknowledged too.
    eventsAcked: chosen.reduce((n, a) => n + Math.max(0, Math.min(a.ackedUpTo, a.blast!.startSeq + a.blast!.sent - 1) - a.blast!.startSeq + 1), 0),
    unacked: unacked(),
    startedAt,
    stoppedAt,
    lastAckAt,
    batchAckMs: [...batchAckMs],
  };
  for (const a of chosen) a.blast = null;
  return result;
}

// ---- enrolment and ramp ------------------------------------------------------------------

async function enrollAll(concurrency: number): Promise<AgentReplies["enroll"]> {
  const started = performance.now();
  const errors: string[] = [];
  let next = 0;
  let enrolled = 0;
  async function worker() {
    while (next < agents.length) {
      const a = agents[next++]!;
      if (!a.token) continue;
      try {
        const res = await fetch(`http://127.0.0.1:${ports[a.home ?? 0]}${AGENT_ENROLL_PATH}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            token: a.token,
            public_key: a.publicKey,
            agent_version: AGENT_VERSION,
            host: { hostname: "fleet-sim", os: "Debian 12", arch: "x64", cpu_cores: 8, ram_mb: 32768, disk_gb: 500, docker_version: "28.2.2" },
          }),
        });
        const body = (await res.json()) as EnrollResponse;
        if (res.status !== 200) throw new Error(`enrol: HTTP ${res.status} ${JSON.stringify(body)}`);
        a.serverId = body.server_id;
        a.token = null;
        if (trustedKeys.size === 0) trustedKeys = keyMap(body.signing_keys);
        enrolled++;
      } catch (err) {
        if (errors.length < 5) errors.push(err instanceof Error ? err.message : String(err));
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { enrolled, failed: agents.length - enrolled, errors, ms: performance.now() - started };
}

/** Agents between opening their socket and `ready` (retries waiting for their backoff excluded). */
let inHandshake = 0;

/**
 * Opens links at `ratePerSec`, never with more than `maxConnecting` handshakes in flight (0: no
 * cap). The cap turns a control plane that handshakes slower than the offered rate into a slower
 * ramp instead of a queue that outgrows the handshake timeout.
 */
function ramp(ratePerSec: number, maxConnecting: number, queue = agents.filter((a) => a.state === "idle" && a.serverId !== "")) {
  const started = performance.now();
  let opened = 0;
  const timer = setInterval(() => {
    const due = Math.min(queue.length, Math.floor(((performance.now() - started) / 1000) * ratePerSec) + 1);
    while (opened < due && (maxConnecting === 0 || inHandshake < maxConnecting)) connect(queue[opened++]!);
    if (opened >= queue.length) clearInterval(timer);
  }, 10);
}

const keyMap = (keys: SigningKey[]) => new Map(keys.map((k) => [k.key_id, importPublicKey(k.public_key)]));

function status(withIds: boolean): AgentStatus {
  const s: AgentStatus = {
    total: agents.length,
    held: 0,
    connecting: 0,
    notStarted: 0,
    failed: 0,
    dropped: 0,
    retries: counters.retries,
    closeCodes,
    nacks,
    handshakeMs,
    pingsSent: counters.pingsSent,
    pongs: counters.pongs,
    statsSent: counters.statsSent,
    acks: counters.acks,
    commandsVerified: counters.verified,
    commandsRejected: counters.rejected,
    deadLinks: counters.deadLinks,
    rssMb: Math.round(process.memoryUsage().rss / 1024 / 1024),
  };
  const ids: string[] = [];
  const replicasOfIds: number[] = [];
  const heldByReplica = new Array<number>(Math.max(1, ports.length)).fill(0);
  for (const a of agents) {
    if (a.state === "ready" && a.ws?.readyState === WebSocket.OPEN) {
      s.held++;
      heldByReplica[a.replica ?? 0]!++;
      if (withIds) {
        ids.push(a.serverId);
        replicasOfIds.push(a.replica ?? 0);
      }
    } else if (a.state === "connecting") s.connecting++;
    else if (a.state === "idle") s.notStarted++;
    else if (a.state === "failed") s.failed++;
    else if (a.state === "dropped") s.dropped++;
  }
  if (withIds) {
    s.readyIds = ids;
    s.readyReplicas = replicasOfIds;
  }
  s.heldByReplica = heldByReplica;
  return s;
}

async function handle(request: AgentRequest): Promise<AgentReplies[AgentRequest["type"]]> {
  switch (request.type) {
    case "keys": {
      agents = [];
      for (let i = 0; i < request.count; i++) {
        // The public key comes out encoded by the generation itself. Exporting it afterwards
        // as JWK can deadlock Node 20 (ExportJWK holds the key's mutex while allocating; a GC
        // then frees the finished KeyGenJob, whose destructor takes the same mutex).
        // Node returns the encoded half as a Buffer and the other as a KeyObject; the typings
        // only know both-or-neither.
        const { publicKey: spki, privateKey } = generateKeyPairSync("ed25519", {
          publicKeyEncoding: { type: "spki", format: "der" },
        } as never) as unknown as { publicKey: Buffer; privateKey: KeyObject };
        agents.push({
          serverId: "",
          token: null,
          key: privateKey,
          publicKey: spki.subarray(SPKI_PREFIX_BYTES).toString("base64"),
          ws: null,
          state: "idle",
          version: 1,
          nextSeq: 1,
          ackedUpTo: 0,
          outstanding: [],
          journal: [],
          lastFrameAt: 0,
          attempts: 0,
          startedAt: 0,
          blast: null,
        });
      }
      // Collect the finished key-generation jobs now, before any key is used again.
      (globalThis as { gc?: () => void }).gc?.();
      return { publicKeys: agents.map((a) => a.publicKey) };
    }
    case "assign":
      ports = request.ports && request.ports.length > 0 ? [...request.ports] : [request.port];
      statsMs = request.statsMs;
      trustedKeys = keyMap(request.trustedKeys);
      agents.forEach((a, i) => {
        a.serverId = request.serverIds?.[i] ?? "";
        a.token = request.tokens?.[i] ?? null;
        a.home = a.replica = i % ports.length;
      });
      return null;
    case "enroll":
      return enrollAll(request.concurrency);
    case "connect":
      ramp(request.ratePerSec, request.maxConnecting);
      return null;
    case "status":
      return status(request.readyIds);
    case "blast":
      return blast(request.agents, request.batchSize, request.window, request.durationMs);
    case "replicas":
      ports = [...request.ports];
      return null;
    case "policy":
      policy = request.policy;
      drainSpreadMs = request.drainSpreadMs;
      // A new policy starts from the first backoff step, as a freshly started agent would.
      for (const a of agents) a.backoff = undefined;
      return null;
    case "herd-mark":
      herd = newHerd();
      return null;
    case "herd-report": {
      let pending = 0;
      for (const a of agents) if (a.droppedAt) pending++;
      return { ...herd, pending };
    }
    case "rehome": {
      ports[request.replica] = request.port;
      const queue: Agent[] = [];
      for (const a of agents) {
        if (a.home !== request.replica || a.state !== "ready" || !a.ws) continue;
        // The agent's own close: nothing reconnects it but this ramp.
        const ws = a.ws;
        a.ws = null;
        a.state = "idle";
        a.replica = request.replica;
        a.attempts = 0;
        ws.close(1000, "moving back to its replica");
        queue.push(a);
      }
      ramp(request.ratePerSec, request.maxConnecting, queue);
      return { moving: queue.length };
    }
    case "close":
      for (const a of agents) {
        if (a.retry) clearTimeout(a.retry);
        a.state = "failed";
        a.ws?.terminate();
      }
      setTimeout(() => process.exit(0), 50);
      return null;
  }
}

serveRequests<AgentRequest>(handle);
emit({ event: "ready", pid: process.pid });
