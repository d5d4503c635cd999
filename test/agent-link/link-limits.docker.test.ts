// What an agent, or an unauthenticated WebSocket, may cost the control plane (security
// finding 6), each attack made over the real link: an oversized frame before the handshake,
// many unauthenticated sockets and a hello flood from one address, an over-long log line, a
// server sending more log lines than its budget, and a flood of frames that must pause the
// socket rather than queue without end. Small limits, and every client tells its address
// through X-Forwarded-For (trustProxy), so each test counts for an address of its own.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { createDemoOrganization } from "@berth/control-plane";
import {
  AGENT_CONNECT_PATH,
  CLOSE_CODES,
  CONTROL_PLANE_MESSAGE_TYPES,
  MAX_HANDSHAKE_FRAME_BYTES,
  MAX_MESSAGE_LENGTH,
  PROTOCOL_VERSIONS,
  encodeFrame,
  parseFrame,
  truncateMessage,
  type Event,
  type Payload,
  type SignedCommand,
} from "@berth/protocol";
import { PAUSE_ABOVE } from "../../apps/control-plane/src/modules/agents/link/frame-queue.ts";
import { logLines } from "../support/log-lines.ts";
import { useTestImages } from "../support/real-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { urlOf } from "../support/sse.ts";
import { waitUntil } from "../support/wait.ts";

const LIMITS = { handshakesPerAddress: 3, hellosPerAddressPerMinute: 5, logLinesPerMinute: 50, logBytesPerMinute: 1024 * 1024 };

let cp: TestControlPlane;
let base: string;
const cleanup: (() => void)[] = [];
let logged: string[] = [];
let nextAddress = 1;
/** An address no other test has used. */
const freshAddress = () => `203.0.113.${nextAddress++}`;

beforeAll(async () => {
  const log = logLines();
  logged = log.lines;
  cp = await startControlPlane({ listen: true, heartbeatMs: 5000, trustProxy: true, agentLimits: LIMITS, logger: { level: "warn", stream: log.stream } });
  base = urlOf(cp);
  await useTestImages(cp);
}, 60_000);
afterAll(async () => {
  for (const c of cleanup) c();
  await cp?.close();
});

const stats = () => cp.app.gateway.linkStats();
const until = (what: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000) => waitUntil(what, check, { timeoutMs, intervalMs: 20 });

/** A WebSocket to the agent route that does only what the test tells it. */
function rawSocket(address: string) {
  const ws = new WebSocket(base.replace(/^http/, "ws") + AGENT_CONNECT_PATH, { headers: { "x-forwarded-for": address } });
  const seen = { challenge: null as Payload<"challenge"> | null, closed: null as number | null, nacks: [] as Payload<"nack">[] };
  ws.on("message", (data) => {
    const parsed = parseFrame(data.toString(), { accept: CONTROL_PLANE_MESSAGE_TYPES });
    if (!parsed.ok) return;
    if (parsed.frame.type === "challenge") seen.challenge = parsed.frame.payload as Payload<"challenge">;
    if (parsed.frame.type === "nack") seen.nacks.push(parsed.frame.payload as Payload<"nack">);
  });
  ws.on("close", (code) => (seen.closed = code));
  ws.on("error", () => {});
  cleanup.push(() => ws.terminate());
  return { ws, seen };
}

/** A hello for an unknown server, well formed but never verifiable: each one the gateway looks up is one query. */
function forgedHello() {
  return encodeFrame("hello", {
    server_id: crypto.randomUUID(),
    agent_version: "flood-1.0",
    protocol_versions: [...PROTOCOL_VERSIONS],
    capabilities: [],
    last_command_seq: 0,
    next_event_seq: 1,
    challenge_signature: Buffer.alloc(64, 1).toString("base64"),
  });
}

/** An organisation's own server with a connected simulated agent (from an address of its own), and a deployment of that server in progress. */
async function agentWithDeployment() {
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const token = await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  let command: SignedCommand | undefined;
  const agent = new SimAgent({ baseUrl: base, token: token.token, onCommand: (cmd) => (command = cmd) });
  await agent.enroll();
  await agent.connect(base, { headers: { "x-forwarded-for": freshAddress() } });
  const pinger = setInterval(() => agent.ping(), 1000);
  cleanup.push(() => (clearInterval(pinger), agent.close()));
  const deploymentId = (await publicClient(cp.app, d.api_keys.org_rw).post(`/environments/${d.environments.running}/deploy`)).body.task_id as string;
  await agent.until(() => command !== undefined, 10_000, "the deploy command");
  return { d, agent, deploymentId, command: command! };
}

const ev = (a: SimAgent, body: Record<string, unknown>): Event => a.event(body);
/** Sends a batch and waits for its ack, as a real agent does (one batch on the wire). */
const sendAcked = (a: SimAgent, events: Event[]) => a.sendAcked(events);

async function deploymentLogs(deploymentId: string) {
  const { rows } = await cp.database.pool.query<{ level: string; message: string; step: string | null }>(
    "select level, message, step from deployment_logs where deployment_id = $1 order by id",
    [deploymentId],
  );
  return rows;
}

describe("before the handshake", () => {
  it("a frame larger than MAX_HANDSHAKE_FRAME_BYTES closes the socket with 1009, even one never finished", async () => {
    const whole = rawSocket(freshAddress());
    await until("the challenge", () => whole.seen.challenge !== null);
    whole.ws.send("x".repeat(MAX_HANDSHAKE_FRAME_BYTES + 1));
    await until("the close", () => whole.seen.closed !== null);
    expect(whole.seen.closed).toBe(CLOSE_CODES.too_large);

    // A first fragment over the bound, its message never ended: refused by its header, not
    // buffered waiting for the rest.
    const fragment = rawSocket(freshAddress());
    await until("the challenge", () => fragment.seen.challenge !== null);
    fragment.ws.send(Buffer.alloc(MAX_HANDSHAKE_FRAME_BYTES + 1, 0x78), { fin: false, binary: false });
    await until("the close", () => fragment.seen.closed !== null);
    expect(fragment.seen.closed).toBe(CLOSE_CODES.too_large);
  });

  it("an address may hold only so many unauthenticated sockets; more are closed at once, and an agent past its handshake no longer counts", async () => {
    const address = freshAddress();
    const refusedBefore = stats().connectionsRefused;
    const held = [rawSocket(address), rawSocket(address), rawSocket(address)];
    await until("three challenges", () => held.every((s) => s.seen.challenge !== null));
    const extra = rawSocket(address);
    await until("the extra socket's close", () => extra.seen.closed !== null);
    expect(extra.seen.closed).toBe(CLOSE_CODES.rate_limited);
    expect(extra.seen.challenge).toBeNull();
    expect(stats().connectionsRefused).toBe(refusedBefore + 1);
    // Other addresses are not held back by this one.
    const elsewhere = rawSocket(freshAddress());
    await until("a challenge from elsewhere", () => elsewhere.seen.challenge !== null);
    // One closed frees its place.
    const handshaking = stats().handshaking;
    held[0]!.ws.close();
    await until("the place freed", () => stats().handshaking === handshaking - 1);
    const next = rawSocket(address);
    await until("the next challenge", () => next.seen.challenge !== null);
    expect(next.seen.closed).toBeNull();

    // An agent's connection counts while it handshakes, not once it is ready.
    const agentAddress = freshAddress();
    const idle = [rawSocket(agentAddress), rawSocket(agentAddress)];
    await until("two challenges", () => idle.every((s) => s.seen.challenge !== null));
    const d = await createDemoOrganization(cp.database.db, cp.app.services);
    const agent = new SimAgent({ baseUrl: base, token: (await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null)).token });
    await agent.enroll();
    await agent.connect(base, { headers: { "x-forwarded-for": agentAddress } });
    cleanup.push(() => agent.close());
    const another = rawSocket(agentAddress);
    await until("a challenge beside the ready agent", () => another.seen.challenge !== null);
    expect(another.seen.closed).toBeNull();
  });

  it("a hello flood past the per-minute limit is closed without looking the hellos up", async () => {
    const address = freshAddress();
    const before = stats();
    const closes: number[] = [];
    // One connection after another, so the limit on open handshakes stays out of the way.
    for (let i = 0; i < 20; i++) {
      const s = rawSocket(address);
      await until("the challenge", () => s.seen.challenge !== null);
      s.ws.send(forgedHello());
      await until("the close", () => s.seen.closed !== null);
      closes.push(s.seen.closed!);
    }
    // The first five are looked up and fail their signature; the other fifteen cost no query.
    expect(closes).toEqual([...Array(5).fill(CLOSE_CODES.auth_failed), ...Array(15).fill(CLOSE_CODES.rate_limited)]);
    const after = stats();
    expect(after.helloLookups - before.helloLookups).toBe(5);
    expect(after.hellosRefused - before.hellosRefused).toBe(15);

    // A minute later the address may say hello again.
    cp.clock.advance(60_000);
    try {
      const later = rawSocket(address);
      await until("the challenge", () => later.seen.challenge !== null);
      later.ws.send(forgedHello());
      await until("the close", () => later.seen.closed !== null);
      expect(later.seen.closed).toBe(CLOSE_CODES.auth_failed);
    } finally {
      // Back: the simulated agents check commands' issued_at against their own clock.
      cp.clock.advance(-60_000);
    }
  });

  it("a connection gets one hello: a second, sent at once behind the first, is not looked up", async () => {
    const before = stats().helloLookups;
    const s = rawSocket(freshAddress());
    await until("the challenge", () => s.seen.challenge !== null);
    s.ws.send(forgedHello());
    s.ws.send(forgedHello());
    s.ws.send(forgedHello());
    await until("the close", () => s.seen.closed !== null);
    expect(s.seen.closed).toBe(CLOSE_CODES.auth_failed);
    await new Promise((r) => setTimeout(r, 200));
    expect(stats().helloLookups - before).toBe(1);
  });
});

describe("after the handshake", () => {
  it("a log line over MAX_MESSAGE_LENGTH gets its batch refused; the agent's truncation makes it one that is stored", async () => {
    const { agent, deploymentId, command } = await agentWithDeployment();
    const ids = { command_id: command.command_id, deployment_id: deploymentId, step: "initializing" };
    const huge = "h".repeat(MAX_MESSAGE_LENGTH + 1);
    const refused = [ev(agent, { kind: "log", ...ids, level: "info", message: huge })];
    // By hand: encodeFrame refuses to build such a frame.
    agent.socket!.send(JSON.stringify({ v: 1, type: "events", id: crypto.randomUUID(), ts: new Date().toISOString(), payload: { events: refused } }));
    await agent.until(() => agent.nacks.length > 0, 10_000, "the nack");
    expect(agent.nacks[0]).toMatchObject({ code: "invalid_payload", message: expect.stringContaining("/events/0") });
    expect(agent.ackedUpTo).toBe(0);

    // One character less is a line like any other; and the same line as the agent journals
    // it (apps/agent/src/events/bounded-messages.ts) is stored, cut.
    const longest = "l".repeat(MAX_MESSAGE_LENGTH);
    const truncated = truncateMessage(huge);
    await sendAcked(agent, [ev(agent, { kind: "log", ...ids, level: "info", message: longest }), ev(agent, { kind: "log", ...ids, level: "info", message: truncated })]);
    const logs = await deploymentLogs(deploymentId);
    expect(logs.map((l) => l.message)).toEqual([longest, truncated]);
    expect(truncated.length).toBeLessThanOrEqual(MAX_MESSAGE_LENGTH);
    expect(truncated).toMatch(/^h+…\[truncated 29 characters\]$/);
  });

  it("log lines past the server's budget are acknowledged, not stored, and one notice line says so; steps and results are never dropped", async () => {
    const { d, agent, deploymentId, command } = await agentWithDeployment();
    const ids = { command_id: command.command_id, deployment_id: deploymentId };
    const line = (n: number, step = "pulling_image") => ev(agent, { kind: "log", ...ids, level: "info", message: `line ${n}`, step });
    const pausesBefore = stats().pauses;
    const droppedBefore = stats().logLinesDropped;

    await sendAcked(agent, [ev(agent, { kind: "step.started", ...ids, step: "initializing" }), ...Array.from({ length: 40 }, (_, i) => line(i))]);
    // 10 more fit in the budget of 50; the 30 after them do not, nor the step's lines after it.
    const over = [...Array.from({ length: 20 }, (_, i) => line(40 + i)), ev(agent, { kind: "step.finished", ...ids, step: "initializing" }), ...Array.from({ length: 20 }, (_, i) => line(60 + i, "health_check"))];
    await sendAcked(agent, over);
    expect(agent.ackedUpTo).toBe(over[over.length - 1]!.seq);
    // Within ten seconds of the notice: no second one. The batch ends with a step and a result, both kept.
    const more = [line(80), ev(agent, { kind: "step.started", ...ids, step: "pulling_image" }), line(81), ev(agent, { kind: "command.result", command_id: command.command_id, ok: true, result: { container_id: "c0ffee", container_name: "erp", image: "berth-test/erp:17.0", commit: "abc1234" } })];
    await sendAcked(agent, more);
    // A batch of dropped lines only, none of them replaced by a notice: still acknowledged to its end.
    const tail = [line(82), line(83), line(84)];
    await sendAcked(agent, tail);
    expect(agent.ackedUpTo).toBe(tail[2]!.seq);

    const logs = await deploymentLogs(deploymentId);
    const stored = logs.filter((l) => l.message.startsWith("line "));
    expect(stored.map((l) => l.message)).toEqual(Array.from({ length: 50 }, (_, i) => `line ${i}`));
    const notices = logs.filter((l) => l.message.includes("dropped"));
    expect(notices).toEqual([
      { level: "warning", step: "health_check", message: "30 log lines dropped: this server sent more than 50 lines (or 1 MiB) of logs a minute" },
    ]);
    // The notice sits in the last dropped line's slot: the stream's watermark is the last seq sent.
    const { rows: stream } = await cp.database.pool.query<{ last_event_seq: string }>("select last_event_seq from agent_streams where server_id = $1", [d.server_id]);
    expect(Number(stream[0]!.last_event_seq)).toBe(tail[2]!.seq);
    // Every step and the result were stored and applied.
    const { rows: kinds } = await cp.database.pool.query<{ kind: string }>("select kind from agent_events where server_id = $1 and kind <> 'log' order by seq", [d.server_id]);
    expect(kinds.map((k) => k.kind)).toEqual(["step.started", "step.finished", "step.started", "command.result"]);
    const { rows: cmd } = await cp.database.pool.query<{ state: string }>("select state from agent_commands where command_id = $1", [command.command_id]);
    expect(cmd[0]!.state).toBe("succeeded");
    // Counted and logged on the control plane; a well-behaved agent was never paused.
    expect(stats().logLinesDropped - droppedBefore).toBe(30 + 2 + 3);
    expect(logged.some((l) => l.includes("log budget exceeded") && l.includes(d.server_id))).toBe(true);
    expect(stats().pauses).toBe(pausesBefore);

    // The next minute the server's lines are stored again.
    cp.clock.advance(60_000);
    try {
      await sendAcked(agent, [line(85)]);
    } finally {
      cp.clock.advance(-60_000);
    }
    expect((await deploymentLogs(deploymentId)).map((l) => l.message)).toContain("line 85");
  });

  it("after the handshake a frame of 1 MiB is read; one over MAX_AGENT_FRAME_BYTES closes the link with 1009", async () => {
    const { agent } = await agentWithDeployment();
    const big = Array.from({ length: 130 }, () => ev(agent, { kind: "log", command_id: null, deployment_id: null, level: "info", message: "b".repeat(8000), step: null }));
    await sendAcked(agent, big);
    const tooBig = [ev(agent, { kind: "log", command_id: null, deployment_id: null, level: "info", message: "x", step: null, data: { blob: "y".repeat(4 * 1024 * 1024) } })];
    agent.sendEvents(tooBig);
    await agent.until(() => agent.closes.length > 0, 10_000, "the close");
    expect(agent.closes).toEqual([CLOSE_CODES.too_large]);
  });

  it("a flood of frames pauses the socket: the queue stays bounded, and every batch is still handled once the flood is read", async () => {
    const { agent } = await agentWithDeployment();
    const before = stats();
    const batches: Event[][] = [];
    // 300 frames of about 40 KB each, sent without waiting for acks (12 MB).
    for (let i = 0; i < 300; i++) batches.push(Array.from({ length: 5 }, () => ev(agent, { kind: "log", command_id: null, deployment_id: null, level: "info", message: "f".repeat(8000), step: null })));
    let peakSeen = 0;
    const watch = setInterval(() => (peakSeen = Math.max(peakSeen, stats().queued)), 5);
    try {
      for (const batch of batches) agent.sendEvents(batch);
      const last = batches[batches.length - 1]!.at(-1)!.seq;
      await agent.until(() => agent.ackedUpTo >= last, 60_000, "the flood's last ack");
    } finally {
      clearInterval(watch);
    }
    const after = stats();
    expect(after.pauses).toBeGreaterThan(before.pauses);
    // Paused above PAUSE_ABOVE; what was read already (one socket read, a frame or two of this size) may still queue.
    expect(after.peakQueued).toBeLessThanOrEqual(PAUSE_ABOVE + 4);
    expect(peakSeen).toBeLessThanOrEqual(PAUSE_ABOVE + 4);
    expect(after.paused).toBe(0);
    expect(agent.closes).toEqual([]);
  });
});
