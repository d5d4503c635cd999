// `npm run bench:api-cpu`: the CPU one request of bench:api's two routes costs, the full
// control plane against the bare baseline (bare-app.ts), PostgreSQL's share included. An
// attribution tool beside bench:api: no sockets and no load generator (requests go through
// fastify's inject, in this one process), so what differs is the stacks' own work and the
// statements they make PostgreSQL run, e.g. per-key work a key brings once a minute.
//
// Each round runs BENCH_REQUESTS requests on full and on bare, in alternating order, with 10
// in flight and the keys in rotation as bench:api does; a round's ratio pairs the two, and the
// figure is the median of the rounds' ratios (this machine's speed moves between rounds by
// more than the stacks differ). Environment: BENCH_ROUNDS (7), BENCH_REQUESTS (10000),
// BENCH_KEYS (2000 per route), DATABASE_URL (use that server, in a fresh database; PostgreSQL's
// CPU is then not counted).
import { randomBytes } from "node:crypto";
import pg from "pg";
import { createDb, runMigrations } from "@berth/db";
import { buildApp } from "@berth/control-plane";
import { buildBareApp } from "./bare-app.ts";
import { ROUTES, type Route } from "./api-routes.ts";
import { cpuSnapshot, parentOf, postgresUsed } from "./cpu.ts";
import { startBenchDatabase } from "./database.ts";
import { median } from "./median.ts";
import { seed, type Target } from "./seed.ts";
import { BENCH_AGENT_LIMITS, setting } from "./settings.ts";

const ROUNDS = Math.round(setting("BENCH_ROUNDS", 7));
const REQUESTS = Math.round(setting("BENCH_REQUESTS", 10_000));
const KEYS = Math.round(setting("BENCH_KEYS", 2_000));
const IN_FLIGHT = 10;
type Injector = { inject(opts: { method: "GET"; url: string; headers: Record<string, string> }): Promise<{ statusCode: number; body: string }> };
const log = (line = "") => process.stdout.write(`${line}\n`);
const fmt = (n: number, digits = 1) => n.toFixed(digits);

const database = await startBenchDatabase();
const handles: { close(): Promise<void> }[] = [];
try {
  await runMigrations(database.url);
  const masterKey = randomBytes(32);
  const seeded = await seed(database.url, { organizations: 10, projectsPerOrganization: 20, keysPerRoute: KEYS, masterKey });
  const fullDb = createDb(database.url, { max: 10 });
  handles.push(fullDb);
  const full = await buildApp({ database: fullDb, masterKey, agentLimits: BENCH_AGENT_LIMITS });
  handles.unshift({ close: () => full.close() });
  const pool = new pg.Pool({ connectionString: database.url, max: 10 });
  handles.push({ close: () => pool.end() });
  const bare = buildBareApp(pool);
  handles.unshift({ close: () => bare.close() });
  await Promise.all([full.ready(), bare.ready()]);

  /** PostgreSQL's postmaster, found from one backend as bench:api does (on this machine only). */
  const postmaster = database.local ? await parentOf((await pool.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid) : undefined;

  let next = 0;
  const run = async (app: Injector, route: Route, n: number) => {
    const targets: Target[] = seeded[route];
    let sent = 0;
    const worker = async () => {
      while (sent < n) {
        sent++;
        const t = targets[next++ % targets.length]!;
        const res = await app.inject({ method: "GET", url: ROUTES[route].path(t), headers: { authorization: t.authorization, "x-organization-id": t.organizationId } });
        if (res.statusCode !== 200) throw new Error(`${route} answered ${res.statusCode}: ${res.body}`);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  };
  /** µs of this process's and of PostgreSQL's CPU per request. */
  const measure = async (app: Injector, route: Route) => {
    const cpu0 = process.cpuUsage();
    const pg0 = postmaster === undefined ? undefined : await cpuSnapshot();
    await run(app, route, REQUESTS);
    const cpu = process.cpuUsage(cpu0);
    const pg1 = pg0 === undefined ? undefined : await cpuSnapshot();
    const pgUs = pg0 && pg1 ? postgresUsed(pg0, pg1, postmaster!) * 10_000 : 0; // jiffies of 10 ms
    return { node: (cpu.user + cpu.system) / REQUESTS, postgres: pgUs / REQUESTS };
  };

  const summary: Record<string, number> = {};
  log(`bench:api-cpu: ${ROUNDS} rounds of ${REQUESTS} requests per variant and route, ${IN_FLIGHT} in flight, ${KEYS} keys per route; ${database.description}`);
  log();
  log("route     round   full node µs  full pg µs   bare node µs  bare pg µs   bare/full");
  for (const route of ["task", "projects"] as Route[]) {
    await run(full, route, 3_000);
    await run(bare, route, 3_000);
    const rounds: { full: { node: number; postgres: number }; bare: { node: number; postgres: number } }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const order = i % 2 === 0 ? (["full", "bare"] as const) : (["bare", "full"] as const);
      const got: Partial<(typeof rounds)[number]> = {};
      for (const variant of order) got[variant] = await measure(variant === "full" ? full : bare, route);
      const r = got as (typeof rounds)[number];
      rounds.push(r);
      const ratio = (r.bare.node + r.bare.postgres) / (r.full.node + r.full.postgres);
      log(`${route.padEnd(9)} ${String(i + 1).padStart(5)}   ${fmt(r.full.node).padStart(12)}  ${fmt(r.full.postgres).padStart(10)}   ${fmt(r.bare.node).padStart(12)}  ${fmt(r.bare.postgres).padStart(10)}   ${fmt(ratio, 3).padStart(9)}`);
    }
    const ratio = median(rounds.map((r) => (r.bare.node + r.bare.postgres) / (r.full.node + r.full.postgres)));
    const m = (f: (r: (typeof rounds)[number]) => number) => Number(fmt(median(rounds.map(f))));
    Object.assign(summary, {
      [`${route}_full_node_us_per_req`]: m((r) => r.full.node),
      [`${route}_full_postgres_us_per_req`]: m((r) => r.full.postgres),
      [`${route}_bare_node_us_per_req`]: m((r) => r.bare.node),
      [`${route}_bare_postgres_us_per_req`]: m((r) => r.bare.postgres),
      [`${route}_cpu_ratio`]: Number(fmt(ratio, 3)),
    });
    log(`${route}: CPU per request bare/full = ${fmt(ratio, 3)} (median of the rounds; node and PostgreSQL together)`);
    log();
  }
  log(JSON.stringify({ ...summary, rounds: ROUNDS, requests_per_round: REQUESTS, keys_per_route: KEYS }));
} finally {
  for (const h of handles) await h.close().catch(() => {});
  await database.stop();
}
