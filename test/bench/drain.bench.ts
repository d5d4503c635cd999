// `npm run bench:drain`: how a draining replica's agents land on the replica that stays.
// BENCH_AGENTS simulated agents (the real protocol, test/support/sim-agent.ts) are connected
// to replica A; A drains (lifecycle/drain.ts, no settle time) and each agent, when its link
// closes with 1012, reconnects to replica B after a uniform delay in [0,
// DRAIN_RECONNECT_SPREAD_MS), as the real agent does (apps/agent/src/link/link.ts). Two runs,
// in this process and on one database: handover window 0 (every link closed at once) and
// BENCH_WINDOW_MS (the default BERTH_DRAIN_HANDOVER_MS, 10 s). Figures per run: how long the
// drain took, when the last agent was ready on B, and the most handshakes B finished in any
// 250 ms (as a rate); then the ratio of the two peaks.
//
// Environment: BENCH_AGENTS (300), BENCH_WINDOW_MS (10000), DATABASE_URL (use that server,
// in a fresh database; else an embedded PostgreSQL).
import { createDb, runMigrations, type DbHandle } from "@berth/db";
import { buildApp, createDemoOrganization, type App } from "@berth/control-plane";
import { CLOSE_CODES } from "@berth/protocol";
import { DRAIN_RECONNECT_SPREAD_MS } from "../../apps/agent/src/link/link.ts";
import { drainReplica } from "../../apps/control-plane/src/lifecycle/drain.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { startBenchDatabase } from "./database.ts";
import { BENCH_AGENT_LIMITS, setting } from "./settings.ts";

const AGENTS = Math.floor(setting("BENCH_AGENTS", 300));
const WINDOW_MS = Math.floor(setting("BENCH_WINDOW_MS", 10_000));
const BUCKET_MS = 250;
const MASTER_KEY = Buffer.alloc(32, 9);

const log = (msg = "") => process.stderr.write(`${msg}\n`);
const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : "-");

interface Replica {
  app: App;
  handle: DbHandle;
  url: string;
}

async function startReplica(url: string): Promise<Replica> {
  const handle = createDb(url, { max: 10 });
  const app = await buildApp({ database: handle, masterKey: MASTER_KEY, heartbeatMs: 120_000, agentLimits: BENCH_AGENT_LIMITS });
  const address = await app.listen({ port: 0, host: "127.0.0.1" });
  return { app, handle, url: address };
}

/** At most `n` of `fns` at a time. */
async function limited<T>(n: number, fns: (() => Promise<T>)[]): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < fns.length) {
        const i = next++;
        out[i] = await fns[i]!();
      }
    }),
  );
  return out;
}

interface RunResult {
  windowMs: number;
  drainS: number;
  allBackS: number;
  peakPerS: number;
  handedOver: number;
}

/** Connects every agent to `a`, drains it with `windowMs`; each agent comes back to `b` as the real one would. */
async function run(agents: SimAgent[], a: Replica, b: Replica, windowMs: number): Promise<RunResult> {
  await limited(16, agents.map((agent) => () => agent.connect(a.url)));
  const readyOnB: number[] = [];
  const back = agents.map(
    (agent) =>
      new Promise<void>((resolve, reject) => {
        agent.socket!.once("close", (code: number) => {
          if (code !== CLOSE_CODES.service_restart) return reject(new Error(`link closed with ${code}, not 1012`));
          setTimeout(() => {
            agent.connect(b.url).then(() => {
              readyOnB.push(performance.now());
              resolve();
            }, reject);
          }, Math.random() * DRAIN_RECONNECT_SPREAD_MS);
        });
      }),
  );
  const started = performance.now();
  let drained = 0;
  await Promise.all([
    drainReplica({ app: a.app, settings: { settleMs: 0, handoverMs: windowMs, timeoutMs: 300_000 }, log: () => {}, release: () => a.handle.close() }).then(() => (drained = performance.now())),
    ...back,
  ]);
  const buckets = new Map<number, number>();
  for (const t of readyOnB) {
    const k = Math.floor((t - started) / BUCKET_MS);
    buckets.set(k, (buckets.get(k) ?? 0) + 1);
  }
  const peak = Math.max(...buckets.values());
  return {
    windowMs,
    drainS: (drained - started) / 1000,
    allBackS: (Math.max(...readyOnB) - started) / 1000,
    peakPerS: (peak * 1000) / BUCKET_MS,
    handedOver: readyOnB.length,
  };
}

async function main() {
  const database = await startBenchDatabase();
  log(`bench:drain: ${AGENTS} agents, reconnect spread ${DRAIN_RECONNECT_SPREAD_MS} ms, ${database.description}`);
  try {
    await runMigrations(database.url);
    const b = await startReplica(database.url);
    const d = await createDemoOrganization(b.handle.db, b.app.services);
    const tokens = await limited(
      8,
      Array.from({ length: AGENTS }, (_, i) => async () => (await b.app.services.enrollment.createServer(d.organization_id, { name: `drain-${i}` }, null)).enrollment.token),
    );
    const agents = tokens.map((token) => new SimAgent({ baseUrl: b.url, token }));
    await limited(16, agents.map((agent) => () => agent.enroll()));

    const results: RunResult[] = [];
    for (const windowMs of [0, WINDOW_MS]) {
      const a = await startReplica(database.url);
      results.push(await run(agents, a, b, windowMs));
    }
    for (const agent of agents) agent.close();
    await b.app.close();
    await b.handle.close();

    log("");
    log("handover window | drain (s) | last agent back on B (s) | peak handshakes on B (/s, 250 ms buckets) | agents handed over");
    for (const r of results) log(`${fmt(r.windowMs / 1000).padStart(13)} s | ${fmt(r.drainS).padStart(9)} | ${fmt(r.allBackS).padStart(24)} | ${fmt(r.peakPerS, 0).padStart(42)} | ${r.handedOver}`);
    const [burst, spread] = results as [RunResult, RunResult];
    log(`peak ratio (window 0 / window ${WINDOW_MS / 1000} s): ${fmt(burst.peakPerS / spread.peakPerS, 2)}`);
    process.stdout.write(
      `${JSON.stringify({
        agents: AGENTS,
        reconnect_spread_s: DRAIN_RECONNECT_SPREAD_MS / 1000,
        window_s: WINDOW_MS / 1000,
        drain_s_window0: Number(burst.drainS.toFixed(2)),
        drain_s_window: Number(spread.drainS.toFixed(2)),
        all_back_s_window0: Number(burst.allBackS.toFixed(2)),
        all_back_s_window: Number(spread.allBackS.toFixed(2)),
        peak_handshakes_per_s_window0: burst.peakPerS,
        peak_handshakes_per_s_window: spread.peakPerS,
        peak_ratio: Number((burst.peakPerS / spread.peakPerS).toFixed(2)),
      })}\n`,
    );
  } finally {
    await database.stop();
  }
}

await main();
process.exit(0);
