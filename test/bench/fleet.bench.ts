// `npm run bench:fleet`: how many agents one control-plane process holds, what they cost in
// memory, how fast a command reaches a verified agent under that load, and how many log
// events per second are stored durably.
//
// Processes: this one (orchestrator, PostgreSQL's owner), one control plane
// (fleet/control-plane-process.ts, alone so /proc shows its RSS and CPU), and
// BENCH_AGENT_PROCS simulated-agent processes (fleet/agent-process.ts, raw `ws` clients
// with the protocol package's helpers, one Ed25519 key per agent). Everything talks over
// 127.0.0.1, so the control plane lifts its agent-link limits (BENCH_AGENT_LIMITS in
// settings.ts: handshakes and hellos per address, and the blast's log lines per server).
//
// Phases: seed (servers with each agent's public key) -> ramp (connect at BENCH_RAMP_PER_S)
// -> steady (BENCH_STEADY_S with pings every heartbeat_ms and a stats event every 10 s per
// agent) -> dispatch (BENCH_COMMANDS `diagnostics` commands at BENCH_COMMAND_RATE through
// services.agentCommands.issue(), timed to the agent's verifyCommand) -> blast
// (BENCH_BLAST_AGENTS agents send `log` events in batches of 500 for BENCH_BLAST_S, each
// sending its next batch when the previous one is acknowledged; acks follow the commit).
// The whole fleet keeps pinging and sending stats throughout.
//
// Environment: BENCH_AGENTS (10000), BENCH_AGENT_PROCS (2), BENCH_RAMP_PER_S (500),
// BENCH_MAX_CONNECTING (200 handshakes in flight at most, 0 = no cap), BENCH_RAMP_GRACE_S (80:
// the ramp ends this long after the last agent was due), BENCH_STEADY_S (30), BENCH_HEARTBEAT_MS (15000), BENCH_STATS_MS (10000), BENCH_COMMANDS
// (2000), BENCH_COMMAND_RATE (100 per s), BENCH_BLAST_AGENTS (50), BENCH_BLAST_S (10),
// BENCH_BLAST_WINDOW (1 batch in flight per agent), BENCH_POOL_MAX (10, createDb's default),
// BENCH_ENROLL (db: servers inserted with the agents' public keys; http: servers and tokens
// created by services.enrollment, agents enrol over POST /agent/v1/enroll), DATABASE_URL
// (use that server, in a fresh database), BENCH_TIMEOUT_S (295, or all phase bounds added up when more: a watchdog; every phase has its
// own bound, so a healthy or an overloaded run ends well before it).
// Diagnostics (they slow the control plane a little): BENCH_INSTRUMENT=1 (every SQL statement
// timed, per phase), BENCH_CPU_PROF=1 (a V8 profile of the control plane per phase, kept in a
// printed directory, summarised), BENCH_PG_SETTINGS ("synchronous_commit=off,..." on the bench
// database), BENCH_LOG_LEVEL (control-plane logs at that level to /dev/null), BENCH_COLD_SIGNER=1
// (leave the control plane's signing-key cache cold, as after a restart), BENCH_DISPATCH_DUMP=path
// (every command's issue time, issue() duration and dispatch latency as a tab-separated file).
//
// Replicas: BENCH_REPLICAS (1) control-plane processes on the one PostgreSQL; agent i of each
// agent process is homed on replica i % BENCH_REPLICAS (round robin by port; no balancer
// process). Per replica: RSS before the ramp and after the steady period (MB per 1,000 links),
// CPU per agent-second in the steady period; per phase: PostgreSQL commits per second
// (pg_stat_database.xact_commit). Dispatch issues command k on replica k % BENCH_REPLICAS, so
// most commands go to an agent linked to another replica (NOTIFY), and reports both kinds.
// With 2 or more replicas, the herd phases: the last replica is killed (SIGKILL) and its agents
// reconnect round robin to the survivors, first with the real agent's full-jitter backoff
// (apps/agent/src/link/backoff.ts), then (the replica restarted and its agents moved back)
// with an immediate reconnect; both report the peak attempts and handshakes per second, kill
// to back again (p50/p99/max) and failed attempts, and the ratio of the peaks (BENCH_HERD=0 skips them). BENCH_HERD_S
// (90: the bound of each herd phase), BENCH_DRAIN_SPREAD_MS (5000: a 1012 close brings an
// agent back after a uniform delay below it).
import { randomUUID } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createDb, runMigrations, type DbHandle } from "@berth/db";
import { createServices, systemClock } from "@berth/control-plane";
import type { SigningKey } from "@berth/protocol";
import { Child, firstEvent, startChild } from "./fleet/children.ts";
import type {
  AgentEvent,
  AgentReplies,
  AgentRequest,
  AgentStatus,
  BlastResult,
  CpEvent,
  CpReplies,
  CpRequest,
  LoopDelay,
  MemoryFigures,
  ProfileSummary,
  QueryStats,
  VerifiedItem,
} from "./fleet/ipc.ts";
import { herdFigures, mergeHerdReports, type HerdFigures } from "./fleet/herd.ts";
import type { ReconnectPolicy } from "./fleet/ipc.ts";
import { monoMs } from "./fleet/ipc.ts";
import { cpuSnapshot, cpuUse, findPostmaster, openFilesLimit, rssMb, type CpuSnapshot } from "./fleet/proc.ts";
import { setting } from "./settings.ts";
import { startBenchDatabase } from "./database.ts";

// ---- settings ---------------------------------------------------------------------------


const N = Math.floor(setting("BENCH_AGENTS", 10_000));
const AGENT_PROCS = Math.min(N, Math.floor(setting("BENCH_AGENT_PROCS", 2)));
const RAMP_PER_S = setting("BENCH_RAMP_PER_S", 500);
/** Handshakes in flight across the fleet at most; BENCH_MAX_CONNECTING=0 lifts the cap. */
const MAX_CONNECTING = process.env.BENCH_MAX_CONNECTING === "0" ? 0 : Math.floor(setting("BENCH_MAX_CONNECTING", 200));
/** The ramp gives up this long after the last agent was due to start... */
const RAMP_GRACE_S = setting("BENCH_RAMP_GRACE_S", 80);
/** ...or when no handshake has completed for this long. */
const RAMP_STALL_S = setting("BENCH_RAMP_STALL_S", 15);
const STEADY_S = setting("BENCH_STEADY_S", 30);
const HEARTBEAT_MS = Math.floor(setting("BENCH_HEARTBEAT_MS", 15_000));
const STATS_MS = Math.floor(setting("BENCH_STATS_MS", 10_000));
const COMMANDS = Math.floor(setting("BENCH_COMMANDS", 2000));
const COMMAND_RATE = setting("BENCH_COMMAND_RATE", 100);
const BLAST_AGENTS = Math.floor(setting("BENCH_BLAST_AGENTS", 50));
const BLAST_S = setting("BENCH_BLAST_S", 10);
const BLAST_BATCH = 500;
const BLAST_WINDOW = Math.floor(setting("BENCH_BLAST_WINDOW", 1));
const POOL_MAX = Math.floor(setting("BENCH_POOL_MAX", 10));
const REPLICAS = Math.floor(setting("BENCH_REPLICAS", 1));
const HERD_S = setting("BENCH_HERD_S", 90);
/** BENCH_HERD=0 skips the herd phases (a run that only looks for how many agents the replicas hold). */
const HERD = REPLICAS >= 2 && process.env.BENCH_HERD !== "0";
const DRAIN_SPREAD_MS = Math.floor(setting("BENCH_DRAIN_SPREAD_MS", 5000));
/** Every phase's bound added up (and a minute of setup); 295 s for the default single-replica run. */
/** A replica restarted in the herd phases starts beside busy survivors: it may take long. */
const RESTART_S = 180;
const TIMEOUT_S = setting(
  "BENCH_TIMEOUT_S",
  Math.max(
    295,
    Math.ceil(
      60 + N / RAMP_PER_S + RAMP_GRACE_S + STEADY_S + (COMMANDS / COMMAND_RATE) * 1.5 + 30 + BLAST_S + 30 +
        (HERD ? 3 * HERD_S + N / REPLICAS / RAMP_PER_S + RESTART_S + 30 : 0),
    ),
  ),
);
const ENROLL = process.env.BENCH_ENROLL === "http" ? "http" : "db";
const INSTRUMENT = process.env.BENCH_INSTRUMENT === "1";
const CPU_PROF = process.env.BENCH_CPU_PROF === "1";

/** Fixed, so seeding and the control plane seal and open the signing key alike. */
const MASTER_KEY = Buffer.alloc(32, 0x42);

const GOALS = { agents: 10_000, dispatchP99Ms: 50, eventsPerS: 50_000 };

const here = path.dirname(fileURLToPath(import.meta.url));
const log = (msg: string) => process.stderr.write(`[fleet] ${msg}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
const sortNum = (xs: number[]) => [...xs].sort((a, b) => a - b);

// ---- the database -----------------------------------------------------------------------


// ---- seeding ------------------------------------------------------------------------------

interface Seeded {
  organizationId: string;
  trustedKeys: SigningKey[];
  /** Per agent process: server ids (db mode) or enrolment tokens (http mode), in key order. */
  serverIds: string[][] | null;
  tokens: string[][] | null;
  ms: number;
}

async function seed(handle: DbHandle, publicKeys: string[][]): Promise<Seeded> {
  const started = performance.now();
  const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: "fleet-bench", masterKey: MASTER_KEY });
  const { rows } = await handle.pool.query<{ id: string }>("insert into organizations (name, plan) values ('Fleet bench', 'pro') returning id");
  const organizationId = rows[0]!.id;
  const trustedKeys = await services.signer.pinnedKeys();

  if (ENROLL === "db") {
    // What a finished enrolment leaves behind: the server row with the agent's public key.
    const serverIds: string[][] = [];
    let n = 0;
    for (const keys of publicKeys) {
      const ids = keys.map(() => randomUUID());
      serverIds.push(ids);
      for (let i = 0; i < keys.length; i += 2000) {
        await handle.pool.query(
          `insert into servers (id, organization_id, name, provider, hostname, cpu_cores, ram_mb, disk_gb, status,
             agent_public_key, agent_version, os, arch, docker_version, enrolled_at)
           select id, $1, 'fleet-' || ($4::int + ord), 'self-hosted', 'fleet-' || ($4::int + ord) || '.bench', 8, 32768, 500, 'offline',
             key, 'fleet-sim-1.0.0', 'Debian 12', 'x64', '28.2.2', now()
           from unnest($2::uuid[], $3::text[]) with ordinality as t(id, key, ord)`,
          [organizationId, ids.slice(i, i + 2000), keys.slice(i, i + 2000), n + i],
        );
      }
      n += keys.length;
    }
    return { organizationId, trustedKeys, serverIds, tokens: null, ms: performance.now() - started };
  }

  // http: the public API's path (services.enrollment.createServer), 16 at a time.
  const tokens: string[][] = [];
  for (const keys of publicKeys) {
    const list = new Array<string>(keys.length);
    let next = 0;
    const worker = async () => {
      while (next < keys.length) {
        const i = next++;
        const created = await services.enrollment.createServer(organizationId, { name: `fleet-${tokens.length}-${i}` }, null);
        list[i] = created.enrollment.token;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    tokens.push(list);
  }
  return { organizationId, trustedKeys, serverIds: null, tokens, ms: performance.now() - started };
}

// ---- phases -----------------------------------------------------------------------------------

type CpChild = Child<CpRequest, CpReplies, CpEvent>;
type AgentChild = Child<AgentRequest, AgentReplies, AgentEvent>;

interface PhaseReport {
  name: string;
  wallS: number;
  /** % of one core per group; with replicas, cp0..cpN-1 per replica and cp their sum. */
  cpu: Record<string, number>;
  /** PostgreSQL commits per second in the bench database (pg_stat_database.xact_commit; lags up to a second or so). */
  commitsPerS: number;
  /** Write transactions (transaction ids assigned) per second, and WAL kB per second: the write load. */
  writeXactsPerS: number;
  walKbPerS: number;
  /** The worst replica's event-loop delay. */
  loop: LoopDelay;
  queries: QueryStats | null;
  profile: ProfileSummary | null;
}

interface PgCounters {
  /** Commits in the bench database as pg_stat_database has been told (backends report at most once a second, idle ones up to 10 s late). */
  commits: number;
  /** The next transaction id: write transactions so far, server-wide, counted at once (reading it assigns none). */
  nextXid: number;
  /** WAL written so far, bytes, server-wide. */
  walBytes: number;
}

async function pgCounters(handle: DbHandle): Promise<PgCounters> {
  const { rows } = await handle.pool.query<{ commits: string; next_xid: string; wal: string }>(
    `select (select xact_commit from pg_stat_database where datname = current_database()) as commits,
            txid_snapshot_xmax(txid_current_snapshot()) as next_xid,
            pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0') as wal`,
  );
  const r = rows[0]!;
  return { commits: Number(r.commits), nextXid: Number(r.next_xid), walBytes: Number(r.wal) };
}

class Phases {
  readonly reports: PhaseReport[] = [];
  private current: { name: string; snap: CpuSnapshot; started: number; pg: PgCounters } | null = null;

  /** `cps()`: the live replicas (instrumentation and profiles: the first one's). */
  constructor(
    private readonly cps: () => CpChild[],
    private readonly pids: () => Record<string, number[]>,
    private readonly profileDir: string | null,
    private readonly postmaster: number | undefined,
    private readonly handle: DbHandle,
  ) {}

  async begin(name: string) {
    await Promise.all(this.cps().map((cp) => cp.request({ type: "loop" })));
    const first = this.cps()[0]!;
    if (INSTRUMENT) await first.request({ type: "queries" });
    if (this.profileDir) await first.request({ type: "profile-start" });
    this.current = { name, snap: await cpuSnapshot(this.pids(), this.postmaster), started: performance.now(), pg: await pgCounters(this.handle) };
    log(`phase ${name}`);
  }

  async end(): Promise<PhaseReport> {
    const cur = this.current!;
    const snap = await cpuSnapshot(this.pids(), this.postmaster);
    const wallS = (performance.now() - cur.started) / 1000;
    const pgNow = await pgCounters(this.handle);
    const loops = await Promise.all(this.cps().map((cp) => cp.request({ type: "loop" })));
    const loop = loops.reduce((w, l) => (l.p99Ms > w.p99Ms ? { ...l, maxMs: Math.max(l.maxMs, w.maxMs) } : { ...w, maxMs: Math.max(l.maxMs, w.maxMs) }));
    const first = this.cps()[0]!;
    const queries = INSTRUMENT ? await first.request({ type: "queries" }) : null;
    const profile = this.profileDir ? await first.request({ type: "profile-stop", file: path.join(this.profileDir, `${cur.name}.cpuprofile`) }) : null;
    const cpu = cpuUse(cur.snap, snap, os.cpus().length);
    if (REPLICAS > 1) cpu.cp = Object.entries(cpu).reduce((n, [k, v]) => (/^cp\d+$/.test(k) ? n + v : n), 0);
    const report = {
      name: cur.name,
      wallS,
      cpu,
      commitsPerS: (pgNow.commits - cur.pg.commits) / wallS,
      writeXactsPerS: (pgNow.nextXid - cur.pg.nextXid) / wallS,
      walKbPerS: (pgNow.walBytes - cur.pg.walBytes) / 1024 / wallS,
      loop,
      queries,
      profile,
    };
    this.reports.push(report);
    this.current = null;
    return report;
  }
}

interface Replica {
  index: number;
  child: CpChild;
  pid: number;
  port: number;
  alive: boolean;
}

function sumMemory(list: MemoryFigures[]): MemoryFigures {
  const sum = (k: keyof MemoryFigures) => round(list.reduce((n, m) => n + m[k], 0));
  return { rssMb: sum("rssMb"), heapUsedMb: sum("heapUsedMb"), heapTotalMb: sum("heapTotalMb"), externalMb: sum("externalMb"), arrayBuffersMb: sum("arrayBuffersMb") };
}

interface HerdRun {
  policy: ReconnectPolicy;
  victim: number;
  /** Links the victim held when it was killed. */
  victimLinks: number;
  figures: HerdFigures;
  /** Survivors' CPU (% of one core) and PostgreSQL's, and commits per second, over the phase. */
  survivorsCpu: number;
  postgresCpu: number;
  commitsPerS: number;
  writeXactsPerS: number;
  wallS: number;
  heldAfter: number;
}

function sumStatus(list: AgentStatus[]): AgentStatus {
  const total: AgentStatus = {
    total: 0,
    held: 0,
    connecting: 0,
    notStarted: 0,
    failed: 0,
    dropped: 0,
    retries: 0,
    closeCodes: {},
    nacks: {},
    handshakeMs: [],
    pingsSent: 0,
    pongs: 0,
    statsSent: 0,
    acks: 0,
    commandsVerified: 0,
    commandsRejected: 0,
    deadLinks: 0,
    rssMb: 0,
    readyIds: [],
  };
  for (const s of list) {
    for (const k of ["total", "held", "connecting", "notStarted", "failed", "dropped", "retries", "pingsSent", "pongs", "statsSent", "acks", "commandsVerified", "commandsRejected", "deadLinks", "rssMb"] as const) {
      total[k] += s[k];
    }
    for (const [c, n] of Object.entries(s.closeCodes)) total.closeCodes[c] = (total.closeCodes[c] ?? 0) + n;
    for (const [c, n] of Object.entries(s.nacks)) total.nacks[c] = (total.nacks[c] ?? 0) + n;
    total.handshakeMs.push(...s.handshakeMs);
    total.readyIds!.push(...(s.readyIds ?? []));
    if (s.readyReplicas) (total.readyReplicas ??= []).push(...s.readyReplicas);
    if (s.heldByReplica) {
      total.heldByReplica ??= [];
      s.heldByReplica.forEach((n, i) => (total.heldByReplica![i] = (total.heldByReplica![i] ?? 0) + n));
    }
  }
  return total;
}

// ---- main ---------------------------------------------------------------------------------------

/** Cleanup steps by stage: agents first (cheap), then the control plane, the pool, PostgreSQL. */
const cleanups: Record<"agents" | "controlPlane" | "pool" | "database", (() => Promise<void>)[]> = { agents: [], controlPlane: [], pool: [], database: [] };
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const stage of ["agents", "controlPlane", "pool", "database"] as const) {
      await Promise.all(cleanups[stage].map((fn) => fn().catch((err: unknown) => log(`cleanup: ${err instanceof Error ? err.message : String(err)}`))));
    }
  })();
  return cleaning;
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    log(`${signal}: cleaning up`);
    void cleanup().then(() => process.exit(130));
  });
}
const watchdog = setTimeout(() => {
  log(`timed out after ${TIMEOUT_S} s; cleaning up`);
  void cleanup().then(() => process.exit(2));
}, TIMEOUT_S * 1000);
watchdog.unref();

async function main() {
  const runStarted = performance.now();
  const loadAtStart = os.loadavg();
  const softLimit = await openFilesLimit();
  const perAgentProc = Math.ceil(N / AGENT_PROCS);
  log(`agents ${N} in ${AGENT_PROCS} processes; open-files soft limit ${softLimit}`);

  const database = await startBenchDatabase();
  cleanups.database.push(() => database.stop());
  log(database.description);
  await runMigrations(database.url);
  const pgSettings = (process.env.BENCH_PG_SETTINGS ?? "").split(",").filter(Boolean);
  if (pgSettings.length > 0) {
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    const dbName = new URL(database.url).pathname.slice(1);
    for (const s of pgSettings) {
      const [k, v] = s.split("=");
      if (!k || v === undefined || !/^[a-z_]+$/.test(k)) throw new Error(`BENCH_PG_SETTINGS: bad entry ${s}`);
      await c.query(`alter database "${dbName}" set ${k} = '${v.replaceAll("'", "''")}'`);
    }
    await c.end();
  }
  const handle = createDb(database.url, { max: 16 });
  cleanups.pool.push(() => handle.close());

  // Agent processes first: they make the keys the servers are seeded with.
  const verified = new Map<string, [number, number]>();
  const onAgentEvent = (e: AgentEvent) => {
    if (e.event === "verified") for (const [id, arrived, at] of e.items as VerifiedItem[]) verified.set(id, [arrived, at]);
  };
  const agentChildren: AgentChild[] = [];
  for (let i = 0; i < AGENT_PROCS; i++) {
    const proc = startChild(path.join(here, "fleet", "agent-process.ts"), { env: process.env, needFiles: perAgentProc + 256, softLimit });
    const child = new Child<AgentRequest, AgentReplies, AgentEvent>(`agents-${i}`, proc, onAgentEvent);
    cleanups.agents.push(async () => {
      await child.request({ type: "close" }, 5000).catch(() => {});
      await child.stop(3000);
    });
    await firstEvent<AgentEvent>(proc, child.name, 30_000);
    agentChildren.push(child);
  }
  const counts = agentChildren.map((_, i) => Math.min(perAgentProc, N - i * perAgentProc));
  let keysMs = performance.now();
  const publicKeys = (await Promise.all(agentChildren.map((c, i) => c.request({ type: "keys", count: counts[i]! })))).map((r) => r.publicKeys);
  keysMs = performance.now() - keysMs;
  log(`keys generated in ${Math.round(keysMs)} ms`);
  const seeded = await seed(handle, publicKeys);
  log(`seeded ${N} servers (${ENROLL}) in ${Math.round(seeded.ms)} ms`);

  // The control planes: BENCH_REPLICAS processes on the one database.
  const replicas: Replica[] = [];
  async function startReplica(index: number): Promise<Replica> {
    const proc = startChild(path.join(here, "fleet", "control-plane-process.ts"), {
      env: {
        ...process.env,
        BENCH_DATABASE_URL: database.url,
        BENCH_MASTER_KEY: MASTER_KEY.toString("base64"),
        BENCH_HEARTBEAT_MS: String(HEARTBEAT_MS),
        BENCH_POOL_MAX: String(POOL_MAX),
      },
      // A survivor of the herd holds the dead replica's agents too.
      needFiles: N + 512,
      softLimit,
    });
    const name = REPLICAS > 1 ? `control plane ${index}` : "control plane";
    const ready = await firstEvent<CpEvent>(proc, name, replicas.length > index ? RESTART_S * 1000 : 60_000).catch((err: unknown) => {
      proc.kill("SIGKILL");
      throw err;
    });
    const child = new Child<CpRequest, CpReplies, CpEvent>(name, proc, () => {});
    cleanups.controlPlane.push(async () => {
      if (child.exited) return;
      // A graceful close runs the gateway's per-link disconnect queries; past a few seconds, kill.
      await child.request({ type: "close" }, 8000).catch((err: unknown) => log(`${name} close: ${err instanceof Error ? err.message : String(err)}; killing`));
      await child.stop(1000);
    });
    log(`${name} pid ${ready.pid} on 127.0.0.1:${ready.port}`);
    return { index, child, pid: ready.pid, port: ready.port, alive: true };
  }
  for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica(i));
  const cpReady = { pid: replicas[0]!.pid };
  const port = replicas[0]!.port;
  const live = () => replicas.filter((r) => r.alive);

  await Promise.all(
    agentChildren.map((c, i) =>
      c.request({
        type: "assign",
        port,
        ports: replicas.map((r) => r.port),
        serverIds: seeded.serverIds?.[i] ?? null,
        tokens: seeded.tokens?.[i] ?? null,
        trustedKeys: seeded.trustedKeys,
        statsMs: STATS_MS,
      }),
    ),
  );

  const profileDir = CPU_PROF ? await mkdtemp(path.join(os.tmpdir(), "berth-fleet-prof-")) : null;
  const pids = (): Record<string, number[]> => ({
    ...(REPLICAS > 1 ? Object.fromEntries(live().map((r) => [`cp${r.index}`, [r.pid]])) : { cp: [cpReady.pid] }),
    agents: agentChildren.map((c) => c.proc.pid!),
    bench: [process.pid],
  });
  const postmaster = database.dataDir ? await findPostmaster(database.dataDir) : undefined;
  const phases = new Phases(() => live().map((r) => r.child), pids, profileDir, postmaster, handle);
  const status = async (readyIds = false) => sumStatus(await Promise.all(agentChildren.map((c) => c.request({ type: "status", readyIds }))));

  let enrolment: { ms: number; enrolled: number; failed: number; errors: string[] } | null = null;
  if (ENROLL === "http") {
    await phases.begin("enrol");
    const results = await Promise.all(agentChildren.map((c) => c.request({ type: "enroll", concurrency: 32 }, 300_000)));
    await phases.end();
    enrolment = {
      ms: Math.max(...results.map((r) => r.ms)),
      enrolled: results.reduce((n, r) => n + r.enrolled, 0),
      failed: results.reduce((n, r) => n + r.failed, 0),
      errors: results.flatMap((r) => r.errors),
    };
    log(`enrolled ${enrolment.enrolled} over HTTP in ${Math.round(enrolment.ms)} ms`);
  }

  // Baseline: the idle control plane, settled by a full GC.
  await sleep(1000);
  const baselines = await Promise.all(replicas.map((r) => r.child.request({ type: "memory", gc: true })));
  const baseline = sumMemory(baselines);
  const baselineProcRss = await rssMb(cpReady.pid);

  // Ramp.
  await phases.begin("ramp");
  const rampStarted = performance.now();
  await Promise.all(
    agentChildren.map((c) => c.request({ type: "connect", ratePerSec: RAMP_PER_S / AGENT_PROCS, maxConnecting: Math.ceil(MAX_CONNECTING / AGENT_PROCS) })),
  );
  const rampDeadline = rampStarted + (N / RAMP_PER_S + RAMP_GRACE_S) * 1000;
  let afterRamp: AgentStatus;
  let rampEnd = "all agents started and answered";
  let handshakesSeen = 0;
  let progressAt = performance.now();
  while (true) {
    await sleep(1000);
    afterRamp = await status();
    log(`ramp: held ${afterRamp.held}, connecting ${afterRamp.connecting}, waiting ${afterRamp.notStarted}, failed ${afterRamp.failed}, dropped ${afterRamp.dropped}`);
    if (afterRamp.connecting + afterRamp.notStarted === 0) break;
    if (afterRamp.handshakeMs.length > handshakesSeen) {
      handshakesSeen = afterRamp.handshakeMs.length;
      progressAt = performance.now();
    }
    if (performance.now() - progressAt > RAMP_STALL_S * 1000) {
      rampEnd = `stalled: no handshake completed for ${RAMP_STALL_S} s`;
      break;
    }
    if (performance.now() > rampDeadline) {
      rampEnd = `deadline (${N / RAMP_PER_S + RAMP_GRACE_S} s) passed`;
      break;
    }
  }
  const rampS = (performance.now() - rampStarted) / 1000;
  await phases.end();

  // Steady: everyone pings and sends stats.
  const beforeSteady = await status();
  await phases.begin("steady");
  await sleep(STEADY_S * 1000);
  const steadyReport = await phases.end();
  const afterSteady = await status(true);
  const connectedByReplica = await Promise.all(replicas.map(async (r) => (await r.child.request({ type: "connected" })).count));
  const cpConnected = connectedByReplica.reduce((a, b) => a + b, 0);
  const sessions = Number((await handle.pool.query<{ n: string }>("select count(*) as n from agent_sessions")).rows[0]!.n);
  const online = Number((await handle.pool.query<{ n: string }>("select count(*) as n from servers where status = 'online'")).rows[0]!.n);
  const atN: MemoryFigures = sumMemory(await Promise.all(replicas.map((r) => r.child.request({ type: "memory", gc: false }))));
  const atNProcRss = await rssMb(cpReady.pid);
  const settledByReplica = await Promise.all(replicas.map((r) => r.child.request({ type: "memory", gc: true })));
  const atNSettled = sumMemory(settledByReplica);
  const perReplica = replicas.map((r, i) => {
    const links = connectedByReplica[i]!;
    const cpuPct = REPLICAS > 1 ? (steadyReport.cpu[`cp${i}`] ?? 0) : (steadyReport.cpu.cp ?? 0);
    return {
      index: i,
      links,
      rssBeforeMb: baselines[i]!.rssMb,
      rssAfterMb: settledByReplica[i]!.rssMb,
      rssPer1000Mb: links > 0 ? ((settledByReplica[i]!.rssMb - baselines[i]!.rssMb) / links) * 1000 : Number.NaN,
      // RSS after a GC can fall below the fresh process's (start-up pages handed back): the heap is the steadier figure.
      heapPer1000Mb: links > 0 ? ((settledByReplica[i]!.heapUsedMb - baselines[i]!.heapUsedMb) / links) * 1000 : Number.NaN,
      cpuPct,
      // CPU seconds per agent per second of the steady period, in microseconds.
      cpuUsPerAgentS: links > 0 ? ((cpuPct / 100) * 1e6) / links : Number.NaN,
    };
  });
  const statsRows = Number((await handle.pool.query<{ n: string }>("select count(*) as n from server_stats")).rows[0]!.n);
  log(`held ${afterSteady.held}; control plane sees ${cpConnected}; rss ${atN.rssMb} MB (${atNSettled.rssMb} MB after GC)`);

  // Dispatch: commands to random held agents at a steady rate.
  const ids = afterSteady.readyIds!;
  const linkedTo = new Map(ids.map((id, i) => [id, afterSteady.readyReplicas?.[i] ?? 0]));
  const targets = Array.from({ length: ids.length === 0 ? 0 : COMMANDS }, () => ids[Math.floor(Math.random() * ids.length)]!);
  verified.clear();
  await phases.begin("dispatch");
  const issueDeadlineMs = (COMMANDS / COMMAND_RATE) * 1500 + 5000;
  // Command k is issued on replica k % REPLICAS: with a balancer in front, the API request
  // lands on any replica, whichever holds the agent.
  const issuedOn = new Map<string, number>();
  const issues = await Promise.all(
    replicas.map((r, i) =>
      r.child.request(
        {
          type: "issue",
          organizationId: seeded.organizationId,
          serverIds: targets.filter((_, k) => k % REPLICAS === i),
          ratePerSec: COMMAND_RATE / REPLICAS,
          deadlineMs: issueDeadlineMs,
        },
        issueDeadlineMs + 60_000,
      ),
    ),
  );
  issues.forEach((x, i) => x.issued.forEach(([id]) => issuedOn.set(id, i)));
  const issue = { issued: issues.flatMap((x) => x.issued), errors: issues.flatMap((x) => x.errors), skipped: issues.reduce((n, x) => n + x.skipped, 0) };
  issue.issued.sort((a, b) => a[1] - b[1]);
  const dispatchDeadline = performance.now() + 10_000;
  while (issue.issued.some(([id]) => !verified.has(id)) && performance.now() < dispatchDeadline) await sleep(100);
  await sleep(300); // The last accepted frames reach the control plane.
  await phases.end();
  const serverOf = new Map(
    (await handle.pool.query<{ command_id: string; server_id: string }>("select command_id, server_id from agent_commands")).rows.map((r) => [r.command_id, r.server_id]),
  );
  /** Dispatch latency of commands issued on the replica holding the agent, and on another one. */
  const sameReplica: number[] = [];
  const crossReplica: number[] = [];
  const latencies: number[] = [];
  const issueMs: number[] = [];
  const toArrival: number[] = [];
  const verifyMs: number[] = [];
  for (const [id, t0, took] of issue.issued) {
    issueMs.push(took);
    const v = verified.get(id);
    if (!v) continue;
    latencies.push(v[1] - t0);
    (linkedTo.get(serverOf.get(id) ?? "") === issuedOn.get(id) ? sameReplica : crossReplica).push(v[1] - t0);
    toArrival.push(v[0] - t0);
    verifyMs.push(v[1] - v[0]);
  }
  if (process.env.BENCH_DISPATCH_DUMP) {
    const rows = issue.issued.map(([id, t0, took]) => `${round(t0 - issue.issued[0]![1])}\t${round(took)}\t${verified.has(id) ? round(verified.get(id)![1] - t0) : ""}`);
    await writeFile(process.env.BENCH_DISPATCH_DUMP, `issued_at_ms\tissue_ms\tdispatch_ms\n${rows.join("\n")}\n`);
  }
  // A command never verified within the wait counts as slower than any that was.
  const unverified = issue.issued.length - latencies.length;
  const lat = sortNum([...latencies, ...new Array<number>(unverified).fill(Number.POSITIVE_INFINITY)]);
  const commandStates = (await handle.pool.query<{ state: string; n: string }>("select state, count(*) as n from agent_commands group by state")).rows;

  // Blast: a few agents send log batches as fast as the acks come back.
  await phases.begin("blast");
  const perChild = Math.ceil(BLAST_AGENTS / AGENT_PROCS);
  const blasts: BlastResult[] = await Promise.all(
    agentChildren.map((c, i) =>
      c.request({ type: "blast", agents: Math.min(perChild, BLAST_AGENTS - i * perChild), batchSize: BLAST_BATCH, window: BLAST_WINDOW, durationMs: BLAST_S * 1000 }, (BLAST_S + 60) * 1000),
    ),
  );
  const blastReport = await phases.end();
  const eventsInDb = Number((await handle.pool.query<{ n: string }>("select count(*) as n from agent_events where kind = 'log'")).rows[0]!.n);
  const blastAcked = blasts.reduce((n, b) => n + b.eventsAcked, 0);
  const blastStart = Math.min(...blasts.map((b) => b.startedAt));
  const blastEnd = Math.max(...blasts.map((b) => b.lastAckAt));
  const eventsPerS = blastAcked / ((blastEnd - blastStart) / 1000);
  const batchAcks = sortNum(blasts.flatMap((b) => b.batchAckMs));

  // Herd: kill a replica; its agents reconnect to the survivors. Jitter first, then immediate.
  const herds: HerdRun[] = [];
  const tellAgents = async <T extends AgentRequest>(request: T) => {
    await Promise.all(agentChildren.map((c) => c.request(request)));
  };
  const portsNow = () => replicas.map((r) => (r.alive ? r.port : null));
  async function herd(policy: ReconnectPolicy, victim: Replica): Promise<HerdRun> {
    await tellAgents({ type: "policy", policy, drainSpreadMs: DRAIN_SPREAD_MS });
    await tellAgents({ type: "herd-mark" });
    const before = await status();
    const victimLinks = before.heldByReplica?.[victim.index] ?? 0;
    await phases.begin(`herd-${policy}`);
    // A balancer that sees the replica gone at once: reconnects go to the survivors only.
    victim.alive = false;
    await tellAgents({ type: "replicas", ports: portsNow() });
    const killAt = monoMs();
    process.kill(victim.pid, "SIGKILL");
    log(`herd (${policy}): killed replica ${victim.index} (pid ${victim.pid}) holding ${victimLinks} links`);
    const deadline = performance.now() + HERD_S * 1000;
    let merged = mergeHerdReports(await Promise.all(agentChildren.map((c) => c.request({ type: "herd-report" }))));
    while (performance.now() < deadline) {
      await sleep(500);
      merged = mergeHerdReports(await Promise.all(agentChildren.map((c) => c.request({ type: "herd-report" }))));
      if (merged.dropped >= victimLinks && merged.pending === 0) break;
    }
    await sleep(1000);
    const report = await phases.end();
    merged = mergeHerdReports(await Promise.all(agentChildren.map((c) => c.request({ type: "herd-report" }))));
    const figures = herdFigures(merged, killAt);
    const after = await status();
    log(`herd (${policy}): ${figures.back}/${figures.dropped} back, peak ${figures.peakHandshakesPerS1s} handshakes/s, held ${after.held}`);
    const survivorsCpu = live().reduce((n, r) => n + (report.cpu[`cp${r.index}`] ?? 0), 0);
    return {
      policy,
      victim: victim.index,
      victimLinks,
      figures,
      survivorsCpu,
      postgresCpu: report.cpu.postgres ?? 0,
      commitsPerS: report.commitsPerS,
      writeXactsPerS: report.writeXactsPerS,
      wallS: report.wallS,
      heldAfter: after.held,
    };
  }
  let herdError: string | null = null;
  if (HERD) {
    try {
      await runHerds();
    } catch (err) {
      // What the herd phases measured so far is still reported.
      herdError = err instanceof Error ? err.message : String(err);
      log(`herd phases stopped: ${herdError}`);
    }
  }
  async function runHerds() {
    const victimIndex = REPLICAS - 1;
    herds.push(await herd("jitter", replicas[victimIndex]!));
    // The replica comes back; its own agents move back to it (ramped like the first ramp), so
    // the second herd starts from the same spread.
    await phases.begin("rehome");
    const back = await startReplica(victimIndex);
    replicas[victimIndex] = back;
    await tellAgents({ type: "policy", policy: "none", drainSpreadMs: DRAIN_SPREAD_MS });
    const moving = (
      await Promise.all(
        agentChildren.map((c) =>
          c.request({ type: "rehome", replica: victimIndex, port: back.port, ratePerSec: RAMP_PER_S / AGENT_PROCS, maxConnecting: Math.ceil(MAX_CONNECTING / AGENT_PROCS) }),
        ),
      )
    ).reduce((n, r) => n + r.moving, 0);
    const rehomeDeadline = performance.now() + (moving / RAMP_PER_S + HERD_S) * 1000;
    let onIt = 0;
    while (performance.now() < rehomeDeadline) {
      await sleep(1000);
      const s = await status();
      onIt = s.heldByReplica?.[victimIndex] ?? 0;
      if (s.connecting + s.notStarted === 0) break;
    }
    await phases.end();
    log(`rehome: ${onIt} of ${moving} back on replica ${victimIndex}`);
    herds.push(await herd("immediate", replicas[victimIndex]!));
    await tellAgents({ type: "policy", policy: "none", drainSpreadMs: DRAIN_SPREAD_MS });
  }

  const final = await status();
  const finalRss = await rssMb(cpReady.pid);

  // ---- report ------------------------------------------------------------------------------------
  const loadAtEnd = os.loadavg();
  const same = sortNum(sameReplica);
  const cross = sortNum(crossReplica);
  const hj = herds.find((h) => h.policy === "jitter")?.figures;
  const hi = herds.find((h) => h.policy === "immediate")?.figures;
  const herdRatio =
    hj && hi
      ? {
          handshakes100ms: hi.peakHandshakesPerS100ms / hj.peakHandshakesPerS100ms,
          handshakes1s: hi.peakHandshakesPerS1s / hj.peakHandshakesPerS1s,
          attempts100ms: hi.peakAttemptsPerS100ms / hj.peakAttemptsPerS100ms,
          attempts1s: hi.peakAttemptsPerS1s / hj.peakAttemptsPerS1s,
        }
      : null;
  const held = afterSteady.held;
  // Memory is per open link: held ones plus any still in their handshake when measured.
  const links = afterSteady.held + afterSteady.connecting;
  const rssDelta = atNSettled.rssMb - baseline.rssMb;
  const perThousand = links > 0 ? (rssDelta / links) * 1000 : Number.NaN;
  const heapPerThousand = links > 0 ? ((atNSettled.heapUsedMb - baseline.heapUsedMb) / links) * 1000 : Number.NaN;
  const hs = sortNum(afterSteady.handshakeMs);
  const p50 = percentile(lat, 50);
  const p99 = percentile(lat, 99);
  const ms = (v: number) => (v === Number.POSITIVE_INFINITY ? "not verified" : round(v));
  const jsonMs = (v: number) => (Number.isFinite(v) ? round(v) : null);
  // CPU cost per operation: the phase's CPU seconds over what it did (background load included).
  const cpuUs = (r: PhaseReport, group: string, ops: number) => (ops > 0 ? Math.round((((r.cpu[group] ?? 0) / 100) * r.wallS * 1e6) / ops) : Number.NaN);
  const steadyStats = afterSteady.statsSent - beforeSteady.statsSent;
  const met = (ok: boolean) => (ok ? "yes" : "NO");

  const out: string[] = [];
  const row = (cells: (string | number)[], widths: number[]) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]!) : String(c).padStart(widths[i]!))).join("  ");
  out.push("");
  out.push(`Berth fleet benchmark: ${N} agents in ${AGENT_PROCS} processes, heartbeat ${HEARTBEAT_MS} ms, stats every ${STATS_MS} ms, pool max ${POOL_MAX}`);
  out.push(
    `Ramp ${RAMP_PER_S}/s offered, ${MAX_CONNECTING === 0 ? "no cap on handshakes in flight" : `at most ${MAX_CONNECTING} handshakes in flight`}; steady ${STEADY_S} s; ` +
      `${COMMANDS} commands at ${COMMAND_RATE}/s; blast ${BLAST_AGENTS} agents x ${BLAST_BATCH}-event batches, ${BLAST_WINDOW} in flight each, ${BLAST_S} s`,
  );
  out.push(`Machine: ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB; Node ${process.version}; ${database.description}`);
  out.push(`Load average (uptime) at the start ${loadAtStart.map((l) => round(l, 2)).join(" ")}, at the end ${loadAtEnd.map((l) => round(l, 2)).join(" ")}`);
  if (REPLICAS > 1) out.push(`Replicas: ${REPLICAS} control-plane processes on one PostgreSQL; agents homed round robin by port (no balancer process)`);
  out.push(
    `Setup: keys ${Math.round(keysMs)} ms; seeding ${Math.round(seeded.ms)} ms (${ENROLL === "db" ? "servers inserted with the agents' public keys" : "servers + tokens via services.enrollment"})` +
      (enrolment ? `; HTTP enrolment ${enrolment.enrolled} in ${round(enrolment.ms / 1000)} s (${Math.round(enrolment.enrolled / (enrolment.ms / 1000))}/s, ${enrolment.failed} failed)` : ""),
  );
  out.push("");
  const w1 = [44, 14, 14, 8];
  out.push(row(["figure", "value", "goal", "met"], w1));
  out.push(row(["agents held after steady period", `${held}/${N}`, `${GOALS.agents}`, met(held >= GOALS.agents)], w1));
  out.push(row(["control plane sees / agent_sessions / online", `${cpConnected}/${sessions}/${online}`, "", ""], w1));
  out.push(row(["handshake p50 / p99 (ms, during ramp)", `${round(percentile(hs, 50))} / ${round(percentile(hs, 99))}`, "", ""], w1));
  out.push(row(["ramp: held at its end / seconds", `${afterRamp.held} / ${round(rampS)}`, `${N} / ${round(N / RAMP_PER_S)}`, ""], w1));
  out.push(row(["  handshakes completed per s during ramp", Math.round(afterRamp.held / rampS), `${RAMP_PER_S} offered`, ""], w1));
  out.push(row(["  ramp ended", rampEnd, "", ""], w1));
  out.push(row(["CP RSS before agents (MB, after GC)", baseline.rssMb, "", ""], w1));
  out.push(row(["CP RSS at N (MB, after GC / raw)", `${atNSettled.rssMb} / ${atN.rssMb}`, "", ""], w1));
  out.push(row(["CP RSS per 1,000 agents (MB, after GC)", round(perThousand, 2), "", ""], w1));
  out.push(row(["CP JS heap used at N / per 1,000 (MB)", `${atNSettled.heapUsedMb} / ${round(heapPerThousand, 2)}`, "", ""], w1));
  out.push(row(["commands issued / verified / rejected", `${issue.issued.length}/${latencies.length}/${final.commandsRejected}`, `${COMMANDS}`, ""], w1));
  if (issue.skipped > 0 || issue.errors.length > 0) {
    out.push(row(["  not issued (deadline) / issue() errors", `${issue.skipped}/${issue.errors.length}`, "", issue.errors[0]?.slice(0, 40) ?? ""], w1));
  }
  out.push(row(["dispatch p50 (ms, issue() to verified)", ms(p50), "", ""], w1));
  out.push(row(["dispatch p99 (ms)", ms(p99), `<= ${GOALS.dispatchP99Ms}`, met(p99 <= GOALS.dispatchP99Ms)], w1));
  if (REPLICAS > 1) {
    out.push(row(["  issued on the agent's replica: n, p50 / p99", `${same.length}: ${round(percentile(same, 50))} / ${round(percentile(same, 99))}`, "", ""], w1));
    out.push(row(["  issued on another replica: n, p50 / p99", `${cross.length}: ${round(percentile(cross, 50))} / ${round(percentile(cross, 99))}`, "", ""], w1));
  }
  out.push(row(["agent_commands by state", commandStates.map((r) => `${r.state} ${r.n}`).join(", "), "", ""], w1));
  out.push(row(["  issue() p50 / p99 (ms, commit included)", `${round(percentile(sortNum(issueMs), 50))} / ${round(percentile(sortNum(issueMs), 99))}`, "", ""], w1));
  out.push(row(["  issue() to frame at agent p50 / p99 (ms)", `${round(percentile(sortNum(toArrival), 50))} / ${round(percentile(sortNum(toArrival), 99))}`, "", ""], w1));
  out.push(row(["  parse + verifyCommand at agent p50 (ms)", round(percentile(sortNum(verifyMs), 50), 2), "", ""], w1));
  out.push(row(["log events acked in blast / in agent_events", `${blastAcked}/${eventsInDb}`, "", eventsInDb >= blastAcked ? "ok" : "LOST"], w1));
  out.push(row(["events ingested durably per s", Math.round(eventsPerS), `>= ${GOALS.eventsPerS}`, met(eventsPerS >= GOALS.eventsPerS)], w1));
  out.push(row(["  batch (500) send to ack p50 / p99 (ms)", `${round(percentile(batchAcks, 50))} / ${round(percentile(batchAcks, 99))}`, "", ""], w1));
  out.push(row(["stats events sent / server_stats rows", `${final.statsSent}/${statsRows}`, "", ""], w1));
  out.push(row(["steady: CPU per stats event CP / PG (us)", `${cpuUs(steadyReport, "cp", steadyStats)} / ${cpuUs(steadyReport, "postgres", steadyStats)}`, "", ""], w1));
  out.push(row(["blast: CPU per log event CP / PG (us)", `${cpuUs(blastReport, "cp", blastAcked)} / ${cpuUs(blastReport, "postgres", blastAcked)}`, "", ""], w1));
  out.push(row(["pings sent / pongs", `${final.pingsSent}/${final.pongs}`, "", ""], w1));
  out.push(row(["links dropped / handshakes failed / retries", `${final.dropped}/${final.failed}/${final.retries}`, "", ""], w1));
  out.push(row(["  of the drops, closed by the agent as dead", final.deadLinks, "", ""], w1));
  out.push(row(["close codes seen / nacks", `${JSON.stringify(final.closeCodes)} ${JSON.stringify(final.nacks)}`, "", ""], w1));
  out.push(row(["agent processes RSS (MB, total)", final.rssMb, "", ""], w1));
  out.push(row(["CP RSS at the end (MB, /proc)", `${finalRss} (baseline /proc ${baselineProcRss}, at N ${atNProcRss})`, "", ""], w1));
  out.push("");
  {
    out.push("");
    out.push(
      `Per replica, steady period (${round(steadyReport.wallS)} s): links, RSS (MB, after GC) before the ramp and after, RSS and JS heap MB per 1,000 links, CPU (% of one core), CPU per agent-second`,
    );
    const w3 = [8, 8, 10, 10, 12, 12, 8, 14];
    out.push(row(["replica", "links", "RSS before", "RSS after", "RSS/1,000", "heap/1,000", "CPU %", "CPU us/agent-s"], w3));
    for (const r of perReplica) {
      out.push(row([r.index, r.links, r.rssBeforeMb, r.rssAfterMb, round(r.rssPer1000Mb, 2), round(r.heapPer1000Mb, 2), r.cpuPct, round(r.cpuUsPerAgentS, 1)], w3));
    }
  }
  out.push("");
  out.push("PostgreSQL per phase: commits/s (pg_stat_database.xact_commit, reported by backends up to ~1 s late), write transactions/s (transaction ids), WAL kB/s");
  const w5 = [16, 10, 10, 10];
  out.push(row(["phase", "commits/s", "writes/s", "WAL kB/s"], w5));
  for (const r of phases.reports) out.push(row([r.name, Math.round(r.commitsPerS), Math.round(r.writeXactsPerS), Math.round(r.walKbPerS)], w5));
  if (herds.length > 0 || herdError) {
    out.push("");
    out.push(
      `Herd: a replica killed (SIGKILL), its agents reconnect to the ${REPLICAS - 1} survivors (bound ${HERD_S} s); peaks are the busiest 100 ms window and 1 s window after the kill, per second`,
    );
    const w4 = [10, 8, 10, 16, 16, 20, 14, 12, 12];
    out.push(row(["policy", "links", "back", "attempts/s 100ms/1s", "handshakes/s 100ms/1s", "kill to back p50/p99/max ms", "failed attempts", "survivors CPU", "PG CPU/commits/writes"], w4));
    for (const h of herds) {
      const f = h.figures;
      out.push(
        row(
          [
            h.policy,
            h.victimLinks,
            `${f.back}/${f.dropped}`,
            `${f.peakAttemptsPerS100ms} / ${f.peakAttemptsPerS1s}`,
            `${f.peakHandshakesPerS100ms} / ${f.peakHandshakesPerS1s}`,
            `${f.backP50Ms} / ${f.backP99Ms} / ${f.backMaxMs}`,
            `${f.failed} of ${f.attempts}`,
            `${h.survivorsCpu} %`,
            `${h.postgresCpu} % / ${Math.round(h.commitsPerS)} / ${Math.round(h.writeXactsPerS)}`,
          ],
          w4,
        ),
      );
      if (f.failed > 0 || f.pending > 0) out.push(`  ${h.policy}: failed by close code ${JSON.stringify(f.failedByCode)}, socket errors ${JSON.stringify(f.errors)}, still away ${f.pending}`);
    }
    if (herdError) out.push(`Herd phases stopped early: ${herdError}`);
    if (herdRatio) {
      out.push(
        `Peak ratio immediate / jitter: handshakes ${round(herdRatio.handshakes100ms, 2)} (100 ms) ${round(herdRatio.handshakes1s, 2)} (1 s); attempts ${round(herdRatio.attempts100ms, 2)} (100 ms) ${round(herdRatio.attempts1s, 2)} (1 s)`,
      );
    }
  }
  out.push("");
  const w2 = [10, 7, 6, 6, 7, 6, 6, 7, 8, 14];
  out.push(`CPU per phase, % of one core (${os.cpus().length} cores = ${os.cpus().length * 100} %; steal = taken by the hypervisor; other = not this benchmark; machine = % of all cores busy); CP event-loop delay`);
  out.push(row(["phase", "wall s", "CP", "PG", "agents", "bench", "steal", "other", "machine", "loop p99/max"], w2));
  for (const r of phases.reports) {
    const c = r.cpu;
    out.push(row([r.name, round(r.wallS), c.cp ?? 0, c.postgres ?? 0, c.agents ?? 0, c.bench ?? 0, c.steal ?? 0, c.other ?? 0, c.machine ?? 0, `${round(r.loop.p99Ms)}/${round(r.loop.maxMs)} ms`], w2));
  }
  if (INSTRUMENT) {
    for (const r of phases.reports) {
      if (!r.queries) continue;
      out.push("");
      out.push(`SQL in phase ${r.name} (${round(r.wallS)} s): pool waits ${r.queries.poolWait.count}, mean ${round(r.queries.poolWait.totalMs / Math.max(1, r.queries.poolWait.count), 2)} ms, max ${round(r.queries.poolWait.maxMs)} ms`);
      const entries = Object.entries(r.queries.byStatement).sort((a, b) => b[1].totalMs - a[1].totalMs).slice(0, 14);
      for (const [sql, t] of entries) {
        out.push(`  ${String(t.count).padStart(8)} x ${String(round(t.totalMs / t.count, 2)).padStart(6)} ms = ${String(Math.round(t.totalMs)).padStart(7)} ms  (${round(t.count / r.wallS)}/s)  ${sql}`);
      }
    }
  }
  if (profileDir) {
    out.push("");
    out.push(`CPU profiles of the control plane in ${profileDir} (open in Chrome DevTools or speedscope)`);
    for (const r of phases.reports) {
      const p = r.profile;
      if (!p) continue;
      out.push(`Phase ${r.name}: busy ${p.busyMs} ms of ${p.sampledMs} ms sampled`);
      out.push(`  self by area:     ${p.selfByArea.map(([k, v]) => `${k} ${v}`).join(", ")}`);
      out.push("  self by function:");
      for (const [k, v] of p.selfByFunction) out.push(`    ${String(v).padStart(6)} ms  ${k}`);
      out.push("  inclusive, repo functions:");
      for (const [k, v] of p.inclusiveRepo) out.push(`    ${String(v).padStart(6)} ms  ${k}`);
    }
  }
  const busy = phases.reports.filter((r) => (r.cpu.other ?? 0) >= 20);
  if (busy.length > 0) {
    out.push("");
    out.push(
      `NOTE: other work on this machine used ${busy.map((r) => `${r.cpu.other} % in ${r.name}`).join(", ")} of a core; the figures are pessimistic.`,
    );
  }
  out.push("");
  out.push(
    `Goals (stated for this 2-core machine): ${GOALS.agents} agents held ${met(held >= GOALS.agents)}; dispatch p99 <= ${GOALS.dispatchP99Ms} ms ${met(p99 <= GOALS.dispatchP99Ms)}; >= ${GOALS.eventsPerS} log events/s durably ${met(eventsPerS >= GOALS.eventsPerS)}`,
  );
  out.push(`Run took ${round((performance.now() - runStarted) / 1000)} s before cleanup; steady-phase CP CPU ${steadyReport.cpu.cp ?? 0} %, blast-phase CP CPU ${blastReport.cpu.cp ?? 0} %.`);
  process.stdout.write(out.join("\n") + "\n");

  await cleanup();
  const herdOf = (policy: ReconnectPolicy) => herds.find((h) => h.policy === policy);
  const herdJson = (h: HerdRun | undefined, prefix: string) =>
    h
      ? {
          [`${prefix}_links`]: h.victimLinks,
          [`${prefix}_back`]: h.figures.back,
          [`${prefix}_peak_handshakes_per_s_100ms`]: h.figures.peakHandshakesPerS100ms,
          [`${prefix}_peak_handshakes_per_s_1s`]: h.figures.peakHandshakesPerS1s,
          [`${prefix}_peak_attempts_per_s_100ms`]: h.figures.peakAttemptsPerS100ms,
          [`${prefix}_back_p50_ms`]: h.figures.backP50Ms,
          [`${prefix}_back_p99_ms`]: h.figures.backP99Ms,
          [`${prefix}_back_max_ms`]: h.figures.backMaxMs,
          [`${prefix}_failed_attempts`]: h.figures.failed,
          [`${prefix}_survivors_cpu_pct`]: h.survivorsCpu,
          [`${prefix}_commits_per_s`]: Math.round(h.commitsPerS),
          [`${prefix}_write_xacts_per_s`]: Math.round(h.writeXactsPerS),
        }
      : {};
  const phaseFigure = (name: string, k: "commitsPerS" | "writeXactsPerS" | "walKbPerS") => Math.round(phases.reports.find((r) => r.name === name)?.[k] ?? Number.NaN);
  const commitsIn = (name: string) => phaseFigure(name, "commitsPerS");
  const json = {
    replicas: REPLICAS,
    load1_start: round(loadAtStart[0]!, 2),
    load1_end: round(loadAtEnd[0]!, 2),
    agents_target: N,
    agents_held: held,
    handshake_p99_ms: round(percentile(hs, 99)),
    cp_rss_baseline_mb: baseline.rssMb,
    cp_rss_mb: atNSettled.rssMb,
    cp_rss_raw_mb: atN.rssMb,
    cp_rss_per_1000_agents_mb: round(perThousand, 2),
    cp_heap_per_1000_agents_mb: round(heapPerThousand, 2),
    commands_issued: issue.issued.length,
    commands_verified: latencies.length,
    dispatch_p50_ms: jsonMs(p50),
    dispatch_p99_ms: jsonMs(p99),
    events_acked: blastAcked,
    events_in_db: eventsInDb,
    events_ingested_per_s: Math.round(eventsPerS),
    goal_agents_met: held >= GOALS.agents,
    goal_dispatch_p99_met: p99 <= GOALS.dispatchP99Ms,
    goal_events_per_s_met: eventsPerS >= GOALS.eventsPerS,
    replica_links: perReplica.map((r) => r.links),
    replica_rss_per_1000_agents_mb: perReplica.map((r) => round(r.rssPer1000Mb, 2)),
    replica_heap_per_1000_agents_mb: perReplica.map((r) => round(r.heapPer1000Mb, 2)),
    replica_rss_at_n_mb: perReplica.map((r) => r.rssAfterMb),
    replica_cpu_us_per_agent_s: perReplica.map((r) => round(r.cpuUsPerAgentS, 1)),
    steady_cp_cpu_pct: steadyReport.cpu.cp ?? 0,
    steady_pg_cpu_pct: steadyReport.cpu.postgres ?? 0,
    pg_commits_per_s_steady: commitsIn("steady"),
    pg_commits_per_s_blast: commitsIn("blast"),
    pg_commits_per_s_dispatch: commitsIn("dispatch"),
    pg_write_xacts_per_s_steady: phaseFigure("steady", "writeXactsPerS"),
    pg_write_xacts_per_s_blast: phaseFigure("blast", "writeXactsPerS"),
    pg_wal_kb_per_s_steady: phaseFigure("steady", "walKbPerS"),
    pg_wal_kb_per_s_blast: phaseFigure("blast", "walKbPerS"),
    dispatch_same_replica_p99_ms: jsonMs(percentile(same, 99)),
    dispatch_cross_replica_p50_ms: jsonMs(percentile(cross, 50)),
    dispatch_cross_replica_p99_ms: jsonMs(percentile(cross, 99)),
    ...herdJson(herdOf("jitter"), "herd_jitter"),
    ...herdJson(herdOf("immediate"), "herd_immediate"),
    herd_peak_ratio_immediate_to_jitter_100ms: herdRatio ? round(herdRatio.handshakes100ms, 2) : null,
    herd_peak_ratio_immediate_to_jitter_1s: herdRatio ? round(herdRatio.handshakes1s, 2) : null,
  };
  process.stdout.write(JSON.stringify(json) + "\n");
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exit(1);
  },
);
