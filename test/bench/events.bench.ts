// `npm run bench:events`: log lines per second from agents to an SSE subscriber, and the
// delay from an agent writing a line to the subscriber reading it, through the whole path:
// agent link (WebSocket) -> ingest (deployment_logs, NOTIFY at commit) -> the replica's
// event hub (LISTEN, one shared read per organisation) -> GET /api/v1/events (SSE).
//
// Processes: this one (simulated agents over the real protocol, the SSE reader, the
// database's owner) and the control plane alone in a child (server-process.ts, `full`).
// Each log line carries the wall-clock time its agent made it; the reader subtracts that
// from the time it parsed the line (same machine, same clock).
//
// Agents send like the real one (apps/agent/src/link/event-sender.ts): one batch of at most
// 500 events in flight, the next one when the previous one is acknowledged (after commit).
// Phases: warm-up, then `max` (full batches back to back: as fast as lines are stored) and
// `paced` (lines written at BENCH_RATE lines/s in total, every BENCH_TICK_MS, queued in the
// agent and sent as acks allow; the delay counts from the line's writing, so queueing in the
// agent is included. Delay is only meaningful below the rate the path sustains, so this is
// the phase the delay goal is checked on).
//
// Environment: BENCH_AGENTS (4), BENCH_BATCH (500 lines per events frame at most, the agent's own limit),
// BENCH_DURATION_S (10 per phase), BENCH_RATE (20000), BENCH_TICK_MS (20), BENCH_POOL_MAX
// (10), BENCH_MESSAGE_BYTES (100), BENCH_INSTRUMENT=1 (time every SQL statement of the control plane), BENCH_CPU_PROF=1 (a V8 profile of the control plane per
// phase, summarised), DATABASE_URL (use that server, in a fresh database).
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createDb, runMigrations } from "@berth/db";
import { createDemoOrganization, createServices, systemClock } from "@berth/control-plane";
import type { Event } from "@berth/protocol";
import { SimAgent } from "../support/sim-agent.ts";
import { cpuSnapshot, cpuUse, parentOf, type CpuUse } from "./cpu.ts";
import { startBenchDatabase, type BenchDatabase } from "./database.ts";
import { startServerProcess, type ServerProcess } from "./server-child.ts";
import type { Reply } from "./server-process.ts";
import { setting } from "./settings.ts";


const AGENTS = Math.floor(setting("BENCH_AGENTS", 4));
const BATCH = Math.min(500, Math.floor(setting("BENCH_BATCH", 500)));
const DURATION_S = setting("BENCH_DURATION_S", 10);
const WARMUP_S = setting("BENCH_WARMUP_S", 3);
const RATE = setting("BENCH_RATE", 20_000);
const TICK_MS = setting("BENCH_TICK_MS", 20);
const POOL_MAX = Math.floor(setting("BENCH_POOL_MAX", 10));
const MESSAGE_BYTES = Math.floor(setting("BENCH_MESSAGE_BYTES", 100));
const PROFILE = process.env.BENCH_CPU_PROF === "1";
const INSTRUMENT = process.env.BENCH_INSTRUMENT === "1";
const GOAL = { linesPerS: 20_000, delayP99Ms: 250 };

const log = (msg = "") => process.stderr.write(`${msg}\n`);
const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

// ---- the control plane, in its own process -------------------------------------------------



// ---- the subscriber ------------------------------------------------------------------------

/** Reads the stream and records, per deployment.log line, the delay since its agent made it. */
class Subscriber {
  received = 0;
  delays: number[] = [];
  recording = false;
  private abort = new AbortController();
  private done: Promise<void> = Promise.resolve();

  async open(url: string, organizationId: string, token: string) {
    const res = await fetch(`${url}/api/v1/events?organization_id=${organizationId}`, {
      headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
      signal: this.abort.signal,
    });
    if (res.status !== 200) throw new Error(`GET /api/v1/events: ${res.status} ${await res.text()}`);
    this.done = this.pump(res.body!);
  }

  private async pump(body: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    const reader = body.getReader();
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        const end = buffer.lastIndexOf("\n\n");
        if (end < 0) continue;
        const now = Date.now();
        const chunk = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const block of chunk.split("\n\n")) {
          if (!block.includes("event: deployment.log")) continue;
          const data = block.slice(block.indexOf("data: ") + 6);
          const message = (JSON.parse(data) as { message: string }).message;
          this.received++;
          if (this.recording) this.delays.push(now - Number(message.slice(2, message.indexOf(" ", 2))));
        }
      }
    } catch {
      // aborted
    }
  }

  async close() {
    this.abort.abort();
    await this.done;
  }
}

// ---- the agents ----------------------------------------------------------------------------

const padding = "x".repeat(MESSAGE_BYTES);

function lines(agent: SimAgent, deploymentId: string, n: number): Event[] {
  const ts = new Date();
  const stamp = ts.getTime();
  return Array.from({ length: n }, () => ({
    seq: agent.nextSeq++,
    ts: ts.toISOString(),
    kind: "log" as const,
    command_id: null,
    deployment_id: deploymentId,
    level: "info" as const,
    message: `t=${stamp} ${padding}`.slice(0, Math.max(MESSAGE_BYTES, 16)),
    step: "pulling_image" as const,
  }));
}

interface PhaseResult {
  name: string;
  offered: number;
  sent: number;
  received: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  cpu: CpuUse | undefined;
}

async function phase(
  name: string,
  agents: SimAgent[],
  /** Per agent, a deployment of its own server (an agent's lines for another server's are refused). */
  deploymentIds: string[],
  sub: Subscriber,
  server: ServerProcess,
  pids: { postmaster?: number },
  mode: "max" | "paced",
  seconds: number,
  record: boolean,
  profileDir: string | undefined,
): Promise<PhaseResult> {
  if (record && profileDir) await server.call({ type: "profile-start" });
  if (INSTRUMENT) await server.call({ type: "stats" });
  const before = await cpuSnapshot();
  sub.delays = [];
  sub.recording = record;
  const receivedBefore = sub.received;
  const started = Date.now();
  const until = started + seconds * 1000;
  let sent = 0;

  if (mode === "max") {
    // One batch in flight per agent: the next leaves when the previous one is stored.
    await Promise.all(
      agents.map(async (a, i) => {
        while (Date.now() < until) {
          const batch = lines(a, deploymentIds[i]!, BATCH);
          const top = batch[batch.length - 1]!.seq;
          a.sendEvents(batch);
          sent += batch.length;
          await a.until(() => a.ackedUpTo >= top, 30_000, "an ack");
        }
      }),
    );
  } else {
    // Like the real agent: lines go to its journal as they are written (at RATE in total),
    // and it sends what is pending, up to BATCH, whenever no batch is awaiting an ack.
    const queues: Event[][] = agents.map(() => []);
    const perTick = RATE * (TICK_MS / 1000);
    let producing = true;
    const producer = (async () => {
      let owed = 0;
      let tick = 0;
      while (Date.now() < until) {
        owed += perTick;
        const n = Math.floor(owed);
        owed -= n;
        const per = Math.floor(n / agents.length);
        agents.forEach((a, i) => {
          const k = per + (i < n - per * agents.length ? 1 : 0);
          if (k > 0) queues[i]!.push(...lines(a, deploymentIds[i]!, k));
        });
        tick++;
        await sleep(Math.max(0, started + tick * TICK_MS - Date.now()));
      }
      producing = false;
    })();
    await Promise.all(
      agents.map(async (a, i) => {
        const q = queues[i]!;
        while (producing || q.length > 0) {
          if (q.length === 0) {
            await sleep(1);
            continue;
          }
          const batch = q.splice(0, BATCH);
          const top = batch[batch.length - 1]!.seq;
          a.sendEvents(batch);
          sent += batch.length;
          await a.until(() => a.ackedUpTo >= top, 30_000, "an ack");
        }
      }),
    );
    await producer;
  }
  const sendEnded = Date.now();
  // Let what was sent arrive (bounded): the phase's rate counts until the last line read.
  const target = receivedBefore + sent;
  const drainUntil = Date.now() + 30_000;
  while (sub.received < target && Date.now() < drainUntil) await sleep(5);
  const elapsed = (Math.max(Date.now(), sendEnded) - started) / 1000;
  const after = await cpuSnapshot();
  sub.recording = false;
  if (record && profileDir) await server.call({ type: "profile-stop", file: path.join(profileDir, `${name}.cpuprofile`) });
  if (INSTRUMENT && record) printStatements(name, await server.call({ type: "stats" }));
  const delays = Float64Array.from(sub.delays).sort();
  return {
    name,
    offered: mode === "paced" ? RATE : Number.NaN,
    sent,
    received: sub.received - receivedBefore,
    seconds: elapsed,
    p50: percentile(delays, 50),
    p99: percentile(delays, 99),
    max: delays.length ? delays[delays.length - 1]! : Number.NaN,
    cpu: before && after ? cpuUse(before, after, { server: server.pid, self: process.pid, ...(pids.postmaster ? { postmaster: pids.postmaster } : {}) }) : undefined,
  };
}

/** The statements that took the most connection time in a phase (BENCH_INSTRUMENT=1). */
function printStatements(phaseName: string, reply: Reply) {
  const stats = reply.type === "done" ? reply.stats : undefined;
  if (!stats) return;
  const top = Object.entries(stats.onConnection)
    .sort((a, b) => b[1].totalMs - a[1].totalMs)
    .slice(0, 12)
    .map(([sql, t]) => ({ statement: sql, count: t.count, "mean ms": fmt(t.totalMs / t.count, 2), "max ms": fmt(t.maxMs, 1), "total s": fmt(t.totalMs / 1000, 2) }));
  log(`SQL on the connection, phase ${phaseName}:`);
  console.table(top);
}

/** CPU time of the control plane and PostgreSQL per 1000 lines read: what the path costs, whatever else runs. */
function cpuPer1000(r: PhaseResult): number {
  if (!r.cpu || r.received === 0) return Number.NaN;
  const coreSeconds = ((r.cpu.serverPercent + r.cpu.postgresPercent) / 100) * os.cpus().length * r.seconds;
  return (coreSeconds * 1000 * 1000) / r.received;
}

async function main(): Promise<number> {
  let database: BenchDatabase | undefined;
  let server: ServerProcess | undefined;
  const agents: SimAgent[] = [];
  const sub = new Subscriber();
  try {
    database = await startBenchDatabase();
    log(`PostgreSQL: ${database.description}`);
    await runMigrations(database.url);
    const masterKey = randomBytes(32);

    // Seed: an organisation, a signed-in owner, and per simulated agent a server (its
    // enrolment token) with a project, environment and deployment of its own.
    const handle = createDb(database.url, { max: 2 });
    const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: "events-bench", masterKey });
    const demo = await createDemoOrganization(handle.db, services, { name: "Events bench" });
    const org = { organizationId: demo.organization_id, projectId: null };
    const email = "bench-owner@example.test";
    const user = await services.sessions.createUser({ email, name: "Bench", password: "bench password 123" });
    await services.memberships.addToOrganization(demo.organization_id, user.id, "owner");
    const tokens: string[] = [];
    const deploymentIds: string[] = [];
    for (let i = 0; i < AGENTS; i++) {
      const created = await services.enrollment.createServer(demo.organization_id, { name: `bench-${i}` }, null);
      tokens.push(created.enrollment.token);
      const project = await services.projects.create(org, { name: `Bench ERP ${i}`, server_id: created.serverId, default_branch: "main" });
      const env = await services.environments.create(org, { project_id: project.id, name: "production" });
      deploymentIds.push((await services.deployments.requestAction(org, env.id, "deploy", { userId: null, apiKeyId: null })).id);
    }
    const { rows } = await handle.pool.query<{ pid: number }>("select pg_backend_pid() as pid");
    const postmaster = database.local ? await parentOf(rows[0]!.pid) : undefined;
    await handle.close();

    server = await startServerProcess("full", { databaseUrl: database.url, masterKey, poolMax: POOL_MAX });
    const login = await fetch(`${server.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: "bench password 123" }),
    });
    if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`);
    const session = ((await login.json()) as { token: string }).token;

    for (const token of tokens) {
      const a = new SimAgent({ baseUrl: server.url, token });
      await a.enroll();
      await a.connect();
      agents.push(a);
    }
    await sub.open(server.url, demo.organization_id, session);
    const profileDir = PROFILE ? await mkdtemp(path.join(os.tmpdir(), "berth-events-prof-")) : undefined;
    log(`control plane ${server.url} (own process, pool max ${POOL_MAX}); ${AGENTS} simulated agents and 1 SSE subscriber in this process`);
    log(`lines of ${MESSAGE_BYTES} bytes; phases of ${DURATION_S} s after ${WARMUP_S} s warm-up; paced rate ${RATE} lines/s in ticks of ${TICK_MS} ms`);
    if (profileDir) log(`CPU profiles (figures below are slowed by the profiler): ${profileDir}`);
    log();

    const pids = postmaster ? { postmaster } : {};
    await phase("warm-up", agents, deploymentIds, sub, server, pids, "max", WARMUP_S, false, undefined);
    const max = await phase("max", agents, deploymentIds, sub, server, pids, "max", DURATION_S, true, profileDir);
    const paced = await phase("paced", agents, deploymentIds, sub, server, pids, "paced", DURATION_S, true, profileDir);

    const rows2 = [max, paced].map((r) => ({
      phase: r.name,
      "offered lines/s": r.name === "paced" ? fmt(r.offered) : "as fast as stored",
      "sent": String(r.sent),
      "read by subscriber": String(r.received),
      "lines/s (read)": fmt(r.received / r.seconds),
      "delay p50 ms": fmt(r.p50),
      "delay p99 ms": fmt(r.p99),
      "delay max ms": fmt(r.max),
      "CPU cp / pg / bench / other %": r.cpu ? `${fmt(r.cpu.serverPercent)} / ${fmt(r.cpu.postgresPercent)} / ${fmt(r.cpu.loadGeneratorPercent)} / ${fmt(r.cpu.otherPercent)}` : "-",
      "machine busy (steal) %": r.cpu ? `${fmt(r.cpu.busyPercent)} (${fmt(r.cpu.stealPercent)})` : "-",
      "cp+pg CPU ms / 1000 lines": fmt(cpuPer1000(r), 1),
    }));
    console.table(rows2);
    const linesPerS = Math.round(max.received / max.seconds);
    const pass = linesPerS >= GOAL.linesPerS && paced.p99 <= GOAL.delayP99Ms && paced.received === paced.sent;
    console.log(
      `goal: >= ${GOAL.linesPerS} lines/s with p99 <= ${GOAL.delayP99Ms} ms (at ${RATE} lines/s offered): ${pass ? "met" : "NOT met"}` +
        `; CPU is % of the whole machine (${os.cpus().length} cores)`,
    );
    if (profileDir) log(`summaries: npx tsx test/bench/profile-summary.ts ${profileDir}/max.cpuprofile`);
    console.log(
      JSON.stringify({
        lines_per_s: linesPerS,
        delay_p99_ms: Math.round(paced.p99),
        delay_p50_ms: Math.round(paced.p50),
        paced_lines_per_s: Math.round(paced.received / paced.seconds),
        paced_lost_lines: paced.sent - paced.received,
        max_rate_delay_p99_ms: Math.round(max.p99),
        cpu_ms_per_1000_lines: Math.round(cpuPer1000(max) * 10) / 10,
        machine_other_cpu_percent: Math.round(max.cpu?.otherPercent ?? Number.NaN),
        goal_met: pass,
      }),
    );
    return 0;
  } finally {
    await sub.close();
    for (const a of agents) a.close();
    await server?.stop();
    await database?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
