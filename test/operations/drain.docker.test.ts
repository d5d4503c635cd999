// Graceful drain of a control-plane replica (lifecycle/drain.ts), with two replicas on one
// database: replica A a real server process (apps/control-plane/src/server.ts) that gets
// SIGTERM, replica B in this process, a health-checking TCP balancer in front of both (as
// HAProxy would be), and a real agent process that reaches them through the balancer.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AGENT_CONNECT_PATH, CLOSE_CODES, type SignedCommand } from "@berth/protocol";
import { DRAIN_RECONNECT_SPREAD_MS } from "../../apps/agent/src/link/link.ts";
import { drainReplica } from "../../apps/control-plane/src/lifecycle/drain.ts";
import { REPO_ROOT } from "../../installers/build/build-agent.ts";
import type { AgentProcess } from "../support/agent-process.ts";
import { startBalancer, type Balancer } from "../support/balancer.ts";
import { startControlPlane, TEST_MASTER_KEY, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson, type Person } from "../support/people.ts";
import { startEnrolledAgent } from "../support/real-agent.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { SseStream, urlOf, type SseEvent } from "../support/sse.ts";
import { waitUntil } from "../support/wait.ts";

let b: TestControlPlane;
let d: DemoOrganization;
let owner: Person;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  b = await startControlPlane({ listen: true, heartbeatMs: 1000, outboxSweepMs: 500 });
  d = await createDemoOrganization(b.database.db, b.app.services);
  owner = await addPerson(b.app, "org_owner", { organizationId: d.organization_id });
});
afterAll(async () => {
  for (const clean of cleanups.reverse()) await clean().catch(() => {});
  await b?.close();
});

const portOf = (url: string) => Number(new URL(url).port);
const freshKey = async () => (await b.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: "drain", createdBy: null })).key;

/** Adds a server through B's API: one `server.status` event on the organisation's stream. */
async function addServer(name: string): Promise<string> {
  const res = await publicClient(b.app, await freshKey()).post("/servers", { name, provider: "hetzner" });
  expect(res.status).toBe(201);
  return (res.body as { server: { id: string } }).server.id;
}

const issueDiagnostics = (serverId: string) =>
  b.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:test" });

/** Replica A: `npm start`'s server on B's database, listening on a port of its own. */
async function startReplicaProcess(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string; exited: Promise<number | null> }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(BERTH_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$)/.test(name)));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), "berth-drain-"));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  // node with tsx's loader, one process: the tsx command would relay signals to a child of its
  // own, and kill it at the second one.
  const child = spawn(process.execPath, ["--import", "tsx", "apps/control-plane/src/server.ts"], {
    cwd: REPO_ROOT,
    env: {
      ...base,
      INIT_CWD: REPO_ROOT,
      DATABASE_URL: b.url,
      BERTH_MASTER_KEY: TEST_MASTER_KEY.toString("base64"),
      BERTH_HOST: "127.0.0.1",
      BERTH_PORT: "0",
      BERTH_DATA_DIR: dataDir,
      BERTH_LOG_LEVEL: process.env.BERTH_TEST_LOG ?? "warn",
      BERTH_METRICS: "on",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill("SIGKILL");
    await exited;
  });
  await waitUntil("replica A listening", () => /listening on http:\/\/[\d.]+:\d+/.test(output) || child.exitCode !== null, { timeoutMs: 60_000, intervalMs: 100, detail: () => output });
  const url = /listening on (http:\/\/[\d.]+:\d+)/.exec(output)?.[1];
  if (!url) throw new Error(`replica A did not start: ${output}`);
  return { child, url, output: () => output, exited };
}

/** The agent's JSON log lines with this message. */
function agentLog(agent: AgentProcess, msg: string): Record<string, unknown>[] {
  return agent.output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === msg);
}

const sessionReplica = async (serverId: string) =>
  (await b.database.pool.query<{ replica_id: string }>("select replica_id from agent_sessions where server_id = $1", [serverId])).rows[0]?.replica_id ?? null;

const commandRuns = async (commandId: string) =>
  (await b.database.pool.query<{ n: number }>("select count(*)::int as n from agent_events where command_id = $1 and kind = 'command.result'", [commandId])).rows[0]!.n;

const eventSeqs = async (serverId: string) =>
  (await b.database.pool.query<{ seq: number }>("select seq from agent_events where server_id = $1 order by seq", [serverId])).rows.map((r) => Number(r.seq));

const statsStored = async (serverId: string) =>
  (await b.database.pool.query<{ n: number }>("select count(*)::int as n from org_events where type = 'server.stats' and data->>'server_id' = $1", [serverId])).rows[0]!.n;

// Ids are positions of one stream (they differ between two streams over the same events).
const stripped = (events: SseEvent[]) => events.map((e) => ({ event: e.event, data: e.data as unknown }));

describe("SIGTERM drains a replica", () => {
  it("hands its agent and its event streams over to the other replica, loses nothing, runs every command once, and exits 0", async () => {
    const a = await startReplicaProcess({ BERTH_DRAIN_SETTLE_MS: "500", BERTH_DRAIN_HANDOVER_MS: "1000", BERTH_DRAIN_TIMEOUT_MS: "60000" });
    const balancer: Balancer = await startBalancer([portOf(a.url), portOf(urlOf(b))]);
    cleanups.push(() => balancer.close());

    // The agent enrols and connects through the balancer, which sends it to A (first and healthy).
    const agent = await startEnrolledAgent(b, d.organization_id, d.server_id, balancer.url);
    cleanups.push(() => agent.cleanup());
    await waitUntil("the agent online on A", async () => (await sessionReplica(d.server_id)) !== null && !b.app.gateway.isConnected(d.server_id), {
      timeoutMs: 60_000,
      intervalMs: 100,
      detail: () => agent.output.slice(-2000),
    });
    const aReplica = await sessionReplica(d.server_id);

    // A person follows the organisation's events on A.
    const onA = await SseStream.open(a.url, { organization_id: d.organization_id }, { token: owner.token });
    expect(onA.status).toBe(200);
    await onA.until((s) => s.lastId !== null, "the stream's first id");
    const firstId = onA.lastId!;
    await addServer("before-drain");
    await onA.until((s) => s.events.some((e) => e.event === "server.status" && e.data.status === "pending"), "the first server.status");

    // A command issued just before the drain, and more while it runs.
    const commands = [await issueDiagnostics(d.server_id)];
    a.child.kill("SIGTERM");
    // A second SIGTERM does not start a second drain.
    await new Promise((r) => setTimeout(r, 100));
    a.child.kill("SIGTERM");
    const during: Promise<unknown>[] = [];
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, 250));
      during.push(issueDiagnostics(d.server_id).then((c) => commands.push(c)));
      during.push(addServer(`during-drain-${i}`));
    }
    await Promise.all(during);

    // A was taken out of the balancer by its own /readyz (503 "draining") while /healthz stayed up.
    await waitUntil("A's readyz to say draining", () => balancer.transitions.some(([port, status, body]) => port === portOf(a.url) && status === 503 && body.includes('"draining"')), {
      timeoutMs: 30_000,
      intervalMs: 50,
      detail: () => `${JSON.stringify(balancer.transitions)}\n${a.output()}`,
    });

    // The agent is now held by B, having come back within the drain spread, and A exited 0 before its deadline.
    await waitUntil("the agent on B", () => b.app.gateway.isConnected(d.server_id), { timeoutMs: 30_000, intervalMs: 100, detail: () => agent.output.slice(-3000) });
    expect(await sessionReplica(d.server_id)).not.toBe(aReplica);
    const handover = agentLog(agent, "link down; reconnecting").filter((e) => e.code === CLOSE_CODES.service_restart);
    expect(handover).toHaveLength(1);
    expect(handover[0]!.reason).toBe("draining");
    expect(handover[0]!.retry_in_ms).toBeGreaterThanOrEqual(0);
    expect(handover[0]!.retry_in_ms).toBeLessThan(DRAIN_RECONNECT_SPREAD_MS);
    expect(await a.exited).toBe(0);
    expect(a.output()).toContain("1 agent link handed over (1012)");
    expect(a.output()).toContain("1 event stream ended with a retry hint");
    expect(a.output()).toContain("already draining");
    expect(a.output()).toContain("drained");
    expect(a.output()).not.toContain("deadline passed");
    expect(balancer.routed.at(-1)).toBe(portOf(urlOf(b)));

    // Every command ran exactly once, wherever it was dispatched.
    for (const c of commands) {
      await waitUntil(`command ${c.commandId} answered`, async () => (await commandRuns(c.commandId)) > 0, { timeoutMs: 30_000, intervalMs: 100, detail: () => agent.output.slice(-2000) });
    }
    await new Promise((r) => setTimeout(r, 1000)); // Room for a duplicate to show up, were there one.
    for (const c of commands) {
      expect(await commandRuns(c.commandId)).toBe(1);
      expect(agentLog(agent, "command started").filter((e) => e.command_id === c.commandId)).toHaveLength(1);
    }

    // Every event the agent sent is stored once: its journal is acknowledged up to n, and the
    // events stored (stats as server.stats live events, the rest in agent_events) are n.
    await waitUntil("the journal empty", async () => (await agent.status()).journal.pendingCount === 0, { timeoutMs: 30_000, intervalMs: 250 });
    const journal = (await agent.status()).journal;
    const seqs = await eventSeqs(d.server_id);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs.length).toBeGreaterThanOrEqual(commands.length);
    expect(seqs.length + (await statsStored(d.server_id))).toBe(journal.lastAckedSeq);

    // The stream on A ended with a retry hint; resumed on B from its last id, it misses nothing.
    await onA.until((s) => s.ended, "A's stream to end", 30_000);
    // The hint the stream opened with, then the drain's.
    expect(onA.retries).toHaveLength(2);
    expect(onA.retries[1]).toBeGreaterThanOrEqual(500);
    expect(onA.retries[1]).toBeLessThan(3_000);
    const onB = await SseStream.open(urlOf(b), { organization_id: d.organization_id }, { token: owner.token, lastEventId: onA.lastId! });
    cleanups.push(async () => onB.close());
    await addServer("after-drain");
    const isLast = (e: SseEvent) => e.event === "server.status" && e.data.status === "pending" && typeof e.data.server_id === "string";
    const lastServer = await addServer("marker");
    const reachedMarker = (s: SseStream) => s.events.some((e) => isLast(e) && e.data.server_id === lastServer);
    await onB.until(reachedMarker, "the marker on B");
    const whole = await SseStream.open(urlOf(b), { organization_id: d.organization_id }, { token: owner.token, lastEventId: firstId });
    cleanups.push(async () => whole.close());
    await whole.until(reachedMarker, "the marker on the reference stream");
    const upToMarker = (events: SseEvent[]) => events.slice(0, events.findIndex((e) => isLast(e) && e.data.server_id === lastServer) + 1);
    const resumed = [...stripped(onA.events), ...stripped(upToMarker(onB.events))];
    expect(resumed).toEqual(stripped(upToMarker(whole.events)));
    // The drain's own events are among them: the servers added while A drained.
    expect(resumed.filter((e) => e.event === "server.status" && e.data !== null).length).toBeGreaterThanOrEqual(6);
  }, 180_000);

  it("past BERTH_DRAIN_TIMEOUT_MS exits 1, saying which step it was in and what was still open", async () => {
    const a = await startReplicaProcess({ BERTH_DRAIN_SETTLE_MS: "20000", BERTH_DRAIN_TIMEOUT_MS: "1000" });
    const stream = await SseStream.open(a.url, { organization_id: d.organization_id }, { token: owner.token });
    cleanups.push(async () => stream.close());
    expect(stream.status).toBe(200);
    a.child.kill("SIGTERM");
    expect(await a.exited).toBe(1);
    expect(a.output()).toMatch(/drain deadline passed during "settle"; exiting with 0 agent link\(s\), 1 event stream\(s\), \d+ HTTP connection\(s\), jobs running still open/);
    expect(a.output()).not.toContain("drained");
  }, 120_000);
});

describe("a drain in process", () => {
  it("refuses new links with 503, resends unanswered commands from the next replica, stores resent events once, and counts the handover", async () => {
    const a = await startControlPlane({ url: b.url, listen: true, heartbeatMs: 1000, metrics: { enabled: true, token: null } });
    cleanups.push(() => a.stop());
    const created = await publicClient(b.app, await freshKey()).post("/servers", { name: "sim", provider: "hetzner" });
    const sim = new SimAgent({ baseUrl: urlOf(a), token: (created.body as { enrollment: { token: string } }).enrollment.token });
    await sim.enroll();
    await sim.connect();
    const serverId = sim.identity.server_id;
    const pinger = setInterval(() => sim.ping(), 300);
    cleanups.push(async () => (clearInterval(pinger), sim.close()));

    // The agent gets a command but its answer has not left when the drain starts (dropped here).
    const socket = sim.socket!;
    const realSend = socket.send.bind(socket) as (data: string, ...rest: never[]) => void;
    socket.send = ((data: string, ...rest: never[]) => {
      if (String(data).includes('"command.accepted"')) return;
      return realSend(data, ...rest);
    }) as typeof socket.send;
    const command = await b.app.services.agentCommands.issue({ organizationId: d.organization_id, serverId, type: "diagnostics", params: {}, issuedBy: "system:test" });
    await sim.until(() => sim.received.some((c: SignedCommand) => c.command_id === command.commandId), 5_000, "the command on A");
    // Events stored and acknowledged on A, then a batch the drain cuts before its ack is read.
    await sim.sendAcked(sim.logs(3, "before"));
    const released: string[] = [];
    const drain = drainReplica({
      app: a.app,
      settings: { settleMs: 400, handoverMs: 0, timeoutMs: 30_000 },
      log: () => {},
      release: async () => {
        released.push(await a.app.metrics.registry.metrics());
        await a.database.close();
      },
    });

    // While it settles: not ready, alive, and no new links.
    const ready = await fetch(`${urlOf(a)}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ status: "draining" });
    expect((await fetch(`${urlOf(a)}/healthz`)).status).toBe(200);
    const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const ws = new WebSocket(urlOf(a).replace(/^http/, "ws") + AGENT_CONNECT_PATH);
      ws.on("unexpected-response", (_req, res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      });
      ws.on("open", () => reject(new Error("a draining replica accepted a new link")));
      ws.on("error", () => {});
    });
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toMatchObject({ error: "replica_draining" });
    // A second drain is no drain at all.
    await drainReplica({ app: a.app, settings: { settleMs: 0, handoverMs: 0, timeoutMs: 1_000 }, log: () => {}, release: async () => {} });

    // Sent while A settles: stored and acknowledged there.
    const during = sim.logs(2, "during");
    await sim.sendAcked(during);
    await sim.until(() => sim.closes.length > 0, 10_000, "the handover");
    expect(sim.closes).toEqual([CLOSE_CODES.service_restart]);
    await drain;
    expect(released[0]).toMatch(/^berth_draining 1$/m);
    expect(released[0]).toMatch(/^berth_agents_handed_over_total 1$/m);

    // On B: the unanswered command comes again, and is answered there.
    const before = sim.received.length;
    const readyOnB = await sim.connect(urlOf(b));
    expect(readyOnB.resend_from).toBe(6);
    await sim.until(() => sim.received.length > before, 5_000, "the command again on B");
    expect(sim.received.at(-1)!.command_id).toBe(command.commandId);
    await waitUntil("the command accepted", async () => (await b.database.pool.query("select state from agent_commands where command_id = $1", [command.commandId])).rows[0]?.state !== "pending", { timeoutMs: 10_000, intervalMs: 100 });
    // A batch resent as if its ack had been lost with the link: acknowledged, stored once.
    await sim.sendAcked(during);
    expect(await eventSeqs(serverId)).toEqual([1, 2, 3, 4, 5]);
  }, 60_000);
});
