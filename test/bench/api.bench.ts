// `npm run bench:api`: throughput of the public API's two hottest reads on the real control
// plane over real HTTP, against a bare Fastify + pg baseline serving the same rows.
//
// The ratio includes what the spec requires of the product and the baseline skips (API-key
// authentication, rate metering and its headers, request ids, metrics, validation; see
// bare-app.ts): it is the whole stack's cost against the same rows served bare.
//
// Each server runs in its own child process, started by the same code with the same pool
// size, and autocannon drives both from this process with the same settings. In one
// process the load generator and the server would share an event loop, and the heavier
// server would also slow its own load generator, which skews the ratio. With one process
// each, the server under test gets a whole event loop while the other one sits idle.
//
// Environment: BENCH_DURATION_S (10, per variant, measured in BENCH_SLICES (5) slices that alternate
// with the other variant's), BENCH_WARMUP_S (2), BENCH_CONNECTIONS (50), BENCH_ROUNDS
// (1; more repeat every run: the ratio is the median of the rounds' ratios, each round pairing
// both variants in alternating slices, for machines with noisy neighbours),
// BENCH_ORGS (50), BENCH_PROJECTS_PER_ORG (20), BENCH_POOL_MAX (10), BENCH_ASSUMED_MAX_RPS
// (9000, sizes the key spread: above the full stack's task rate, or a key passes the half-limit budget and leases more often), DATABASE_URL (use that server, in a fresh database).
// Diagnostics, which slow both variants: BENCH_CPU_PROF=1 (a V8 profile of each measured
// run, kept in a printed directory), BENCH_INSTRUMENT=1 (SQL and request timings),
// BENCH_LOG_LEVEL (full stack logs at that level to /dev/null, as server.ts logs at info),
// BENCH_PG_SETTINGS ("synchronous_commit=off,..." set on the bench database for both variants),
// BENCH_SETUP_SQL (run on the bench database before the servers start, for what-if runs such
// as "alter table rate_limit_counters set unlogged"), BENCH_ATTRIBUTION=1 (adds the variant
// bare-auth: bare plus the per-request metering statement the product used before leases).
import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { isDeepStrictEqual } from "node:util";
import autocannon, { type Request, type Result } from "autocannon";
import pg from "pg";
import { createDb, runMigrations } from "@berth/db";
import { createServices, systemClock } from "@berth/control-plane";
import { ROUTES, type Route } from "./api-routes.ts";
import { BASELINE_SQL } from "./bare-app.ts";
import { cpuSnapshot, cpuUse, parentOf, type CpuUse } from "./cpu.ts";
import { startBenchDatabase, type BenchDatabase } from "./database.ts";
import type { Stats } from "./instrument.ts";
import { median } from "./median.ts";
import { seed, type Target } from "./seed.ts";
import { startServerProcess, type ServerProcess } from "./server-child.ts";
import type { Variant } from "./server-process.ts";
import { setting } from "./settings.ts";


const DURATION_S = setting("BENCH_DURATION_S", 10);
const WARMUP_S = setting("BENCH_WARMUP_S", 2);
const CONNECTIONS = setting("BENCH_CONNECTIONS", 50);
const ORGS = setting("BENCH_ORGS", 50);
const PROJECTS_PER_ORG = setting("BENCH_PROJECTS_PER_ORG", 20);
/** createDb's default, which is what server.ts runs with. */
const POOL_MAX = setting("BENCH_POOL_MAX", 10);
const ASSUMED_MAX_RPS = setting("BENCH_ASSUMED_MAX_RPS", 9000);
const PROFILE = process.env.BENCH_CPU_PROF === "1";
const INSTRUMENT = process.env.BENCH_INSTRUMENT === "1";
const ATTRIBUTION = process.env.BENCH_ATTRIBUTION === "1";
const ROUNDS = Math.round(setting("BENCH_ROUNDS", 1));
/** Each variant's BENCH_DURATION_S is measured in this many slices, alternating with the other variant's. */
const SLICES = Math.max(1, Math.round(setting("BENCH_SLICES", 5)));
/** Variants that spend rate limit, each on its own keys; bare borrows full's, as it meters nothing. */
const METERED: Variant[] = ATTRIBUTION ? ["full", "bare-auth"] : ["full"];
const VARIANTS: Variant[] = ATTRIBUTION ? ["full", "bare-auth", "bare"] : ["full", "bare"];

/** The production issue's goal: the full stack keeps at least 90% of the bare route's throughput. */
const GOAL_RATIO = 0.9;
/** Read-only keys may make 120 requests per 60 s window (rate-limits.ts). */
const READ_ONLY_LIMIT = 120;
/** Half the limit, so the rate limiter is never what is measured, even if the estimate is off. */
const PER_KEY_BUDGET = READ_ONLY_LIMIT / 2;

const log = (line = "") => process.stdout.write(`${line}\n`);



/**
 * Every request carries the same two headers on both variants, so both parse the same bytes:
 * the full stack authenticates with the key, the baseline reads the organisation.
 */
function rotatingRequests(route: Route, targets: Target[]): Request[] {
  let i = 0;
  return [
    {
      method: "GET",
      setupRequest: (req) => {
        const t = targets[i++ % targets.length]!;
        return { ...req, path: ROUTES[route].path(t), headers: { authorization: t.authorization, "x-organization-id": t.organizationId } };
      },
    },
  ];
}

const load = async (url: string, requests: Request[], limit: { duration: number } | { amount: number }): Promise<Result> =>
  // autocannon refuses more connections than requests.
  autocannon({ url, connections: "amount" in limit ? Math.min(CONNECTIONS, limit.amount) : CONNECTIONS, pipelining: 1, timeout: 10, requests, ...limit });

/** Proves the baseline serves the same document the product does, before timing either. */
async function assertSameBody(route: Route, target: Target, full: ServerProcess, bare: ServerProcess): Promise<void> {
  const headers = { authorization: target.authorization, "x-organization-id": target.organizationId };
  const get = async (server: ServerProcess) => {
    const res = await fetch(server.url + ROUTES[route].path(target), { headers });
    const body: unknown = await res.json();
    if (res.status !== 200) throw new Error(`${route} on the ${server.variant} server answered ${res.status}: ${JSON.stringify(body)}`);
    return body;
  };
  const [a, b] = [await get(full), await get(bare)];
  if (!isDeepStrictEqual(a, b)) {
    throw new Error(`the baseline's ${route} body differs from the product's:\nfull: ${JSON.stringify(a)}\nbare: ${JSON.stringify(b)}`);
  }
}

/**
 * Captures the SQL the product's services send for the two reads and fails if the baseline
 * no longer sends the same: a repo change must not silently turn this into another comparison.
 */
async function assertSameSql(url: string, masterKey: Buffer, target: Target): Promise<void> {
  const handle = createDb(url, { max: 1 });
  try {
    const sent: string[] = [];
    const query = handle.pool.query.bind(handle.pool) as (...args: unknown[]) => unknown;
    (handle.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const q = args[0];
      sent.push(typeof q === "string" ? q : String((q as { text?: unknown }).text));
      return query(...args);
    };
    const services = createServices({ db: handle.db, clock: systemClock, cursorSecret: "bench-sql-check", masterKey });
    const scope = { organizationId: target.organizationId, projectId: null };
    for (const [route, call] of [
      ["projects", () => services.projects.list(scope, { limit: 20 })],
      ["task", () => services.deployments.getTask(scope, target.taskId)],
    ] as const) {
      sent.length = 0;
      await call();
      if (!isDeepStrictEqual(sent, BASELINE_SQL[route])) {
        throw new Error(`the product's SQL for ${route} changed; update bare-app.ts to send:\n${sent.join("\n")}`);
      }
    }
  } finally {
    await handle.close();
  }
}

/** One measured slice of a variant. */
interface Slice {
  result: Result;
  cpu?: CpuUse;
}

/** A variant's slices in one round, as one measurement. */
interface Measured {
  /** All slices' requests over all their time. */
  rps: number;
  /** The slices' median p50 and highest p99. */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Result["statusCodeStats"];
}

interface Run {
  round: number;
  route: Route;
  variant: Variant;
  /** Priming and warm-up. */
  setup: Result[];
  result: Measured;
  cpu?: CpuUse;
  stats?: Stats;
}

/** Slices of equal length: counts add up, CPU shares average. */
function combine(slices: Slice[]): { result: Measured; cpu?: CpuUse } {
  const results = slices.map((s) => s.result);
  const sum = (f: (r: Result) => number) => results.reduce((a, r) => a + f(r), 0);
  const p50s = results.map((r) => r.latency.p50).sort((a, b) => a - b);
  const statusCodeStats: Result["statusCodeStats"] = {};
  for (const r of results) for (const [code, n] of Object.entries(r.statusCodeStats)) (statusCodeStats[code as keyof typeof statusCodeStats] ??= { count: 0 }).count += n.count;
  const result: Measured = {
    rps: sum((r) => r.requests.total) / Math.max(1e-9, sum((r) => r.duration)),
    p50: p50s[Math.floor(p50s.length / 2)]!,
    p99: Math.max(...results.map((r) => r.latency.p99)),
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    statusCodeStats,
  };
  const cpus = slices.flatMap((s) => (s.cpu ? [s.cpu] : []));
  if (cpus.length !== slices.length) return { result };
  const mean = (f: (c: CpuUse) => number) => cpus.reduce((a, c) => a + f(c), 0) / cpus.length;
  const cpu: CpuUse = {
    busyPercent: mean((c) => c.busyPercent),
    stealPercent: mean((c) => c.stealPercent),
    irqPercent: mean((c) => c.irqPercent),
    serverPercent: mean((c) => c.serverPercent),
    postgresPercent: mean((c) => c.postgresPercent),
    loadGeneratorPercent: mean((c) => c.loadGeneratorPercent),
    otherPercent: mean((c) => c.otherPercent),
    topOthers: [...new Set(cpus.flatMap((c) => c.topOthers))].slice(0, 3),
  };
  return { result, cpu };
}

const count429 = (r: { statusCodeStats: Result["statusCodeStats"] }) => r.statusCodeStats["429"]?.count ?? 0;
const fmt = (n: number, digits = 0) => n.toFixed(digits);
const pad = (cells: string[], widths: number[]) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");

function printStats(run: Run): void {
  const s = run.stats;
  if (!s || s.request.count === 0) return;
  const perRequest = (t: { count: number }) => fmt(t.count / s.request.count, 2);
  log(`  ${run.route} ${run.variant}: ${s.request.count} requests, server time avg ${fmt(s.request.totalMs / s.request.count, 2)} ms`);
  for (const [sql, t] of Object.entries(s.onConnection)) {
    const pooled = s.throughPool[sql];
    const waited = pooled ? ` | via pool avg ${fmt(pooled.totalMs / pooled.count, 2)} ms` : "";
    log(`    ${perRequest(t)}/req  on connection avg ${fmt(t.totalMs / t.count, 2)} ms${waited}  ${sql}`);
  }
}

/** BENCH_PG_SETTINGS and BENCH_SETUP_SQL: changes to the database for both variants alike. */
async function whatIf(url: string): Promise<void> {
  const settings = (process.env.BENCH_PG_SETTINGS ?? "").split(",").filter(Boolean);
  const setupSql = process.env.BENCH_SETUP_SQL;
  if (settings.length === 0 && !setupSql) return;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const dbName = (await admin.query<{ db: string }>("select current_database() as db")).rows[0]!.db;
    for (const setting of settings) {
      const [name, value] = setting.split("=").map((x) => x.trim());
      if (!name || !value || !/^[a-z_.]+$/.test(name)) throw new Error(`BENCH_PG_SETTINGS: expected name=value, got ${JSON.stringify(setting)}`);
      await admin.query(`alter database "${dbName}" set ${name} = '${value.replaceAll("'", "''")}'`);
      log(`what-if: PostgreSQL setting ${name} = ${value}`);
    }
    if (setupSql) {
      await admin.query(setupSql);
      log(`what-if: ran ${setupSql}`);
    }
  } finally {
    await admin.end();
  }
}

async function main(): Promise<number> {
  const keysPerVariant = Math.max(ORGS, Math.ceil((ASSUMED_MAX_RPS * (WARMUP_S + DURATION_S)) / PER_KEY_BUDGET));
  const keysPerRoute = keysPerVariant * METERED.length;
  const targetsFor = (all: Target[], variant: Variant) =>
    variant === "bare-auth" ? all.slice(keysPerVariant, 2 * keysPerVariant) : all.slice(0, keysPerVariant);
  let database: BenchDatabase | undefined;
  const servers: ServerProcess[] = [];
  try {
    database = await startBenchDatabase();
    log(`PostgreSQL: ${database.description}`);
    await runMigrations(database.url);
    const started = Date.now();
    const masterKey = randomBytes(32);
    const seeded = await seed(database.url, { organizations: ORGS, projectsPerOrganization: PROJECTS_PER_ORG, keysPerRoute, masterKey });
    const c = seeded.counts;
    log(`seeded in ${fmt((Date.now() - started) / 1000, 1)} s: ${c.organizations} organisations, ${c.projects} projects, ${c.tasks} tasks, ${c.keys} API keys`);
    log(`  ${keysPerVariant} read-only keys per route and metered variant: <= ${PER_KEY_BUDGET} requests per key per run up to ${ASSUMED_MAX_RPS} req/s (limit ${READ_ONLY_LIMIT} / 60 s)`);

    await assertSameSql(database.url, masterKey, seeded.task[0]!);
    await whatIf(database.url);

    const full = await startServerProcess("full", { databaseUrl: database.url, masterKey, poolMax: POOL_MAX });
    servers.push(full);
    const bare = await startServerProcess("bare", { databaseUrl: database.url, masterKey, poolMax: POOL_MAX });
    servers.push(bare);
    const byVariant: Partial<Record<Variant, ServerProcess>> = { full, bare };
    await assertSameBody("projects", seeded.projects[0]!, full, bare);
    await assertSameBody("task", seeded.task[0]!, full, bare);
    if (ATTRIBUTION) {
      const bareAuth = await startServerProcess("bare-auth", { databaseUrl: database.url, masterKey, poolMax: POOL_MAX });
      servers.push(bareAuth);
      byVariant["bare-auth"] = bareAuth;
      await assertSameBody("projects", seeded.projects[keysPerVariant]!, full, bareAuth);
      await assertSameBody("task", seeded.task[keysPerVariant]!, full, bareAuth);
    }
    log(`servers: ${servers.map((s) => `${s.variant} ${s.url}`).join(", ")} (one process each, pool max ${POOL_MAX}); SQL and bodies checked identical`);
    log(`load: autocannon in this process, ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per variant in ${SLICES} alternating slices`);

    const profileDir = PROFILE ? await mkdtemp(path.join(os.tmpdir(), "berth-bench-prof-")) : undefined;
    if (profileDir) log(`CPU profiles of each variant's middle slice (figures below are slowed by the profiler): ${profileDir}`);
    if (INSTRUMENT) log("instruments on: figures below are slowed by them");
    log();

    // Each round measures a route's variants in alternating slices, A B B A A B ..., so that slow
    // drift (autovacuum, checkpoints, the neighbours' load, seen to move a variant's req/s by
    // a quarter between rounds) weighs on both alike. One run after the other favoured the
    // second-measured variant or the first, whichever way the machine drifted.
    const runs: Run[] = [];
    let maxKeyUse = 0;
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    const postmaster = database.local
      ? await parentOf((await admin.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid)
      : undefined;
    const sliceS = DURATION_S / SLICES;
    /** Primes the variant's keys and warms it up: what its slices then measure is steady state. */
    const prepare = async (round: number, route: Route, variant: Variant): Promise<Result[]> => {
      const server = byVariant[variant]!;
      const targets = targetsFor(seeded[route], variant);
      log(`${ROUNDS > 1 ? `round ${round}/${ROUNDS}: ` : ""}${ROUTES[route].label} ${variant}: priming, warming up...`);
      // One request per key first: the full stack looks a key up on its first use (then keeps
      // it for a minute) and leases its first budget. Spreading load over many keys would
      // otherwise put those first-use round trips, rare in production, into the slices.
      const prime = await load(server.url, rotatingRequests(route, targets), { amount: targets.length });
      const warmup = await load(server.url, rotatingRequests(route, targets), { duration: WARMUP_S });
      return [prime, warmup];
    };
    const slice = async (route: Route, variant: Variant, file: string | undefined): Promise<Slice> => {
      const server = byVariant[variant]!;
      const requests = rotatingRequests(route, targetsFor(seeded[route], variant));
      if (file) await server.call({ type: "profile-start" });
      const before = await cpuSnapshot();
      const result = await load(server.url, requests, { duration: sliceS });
      const after = await cpuSnapshot();
      if (file) await server.call({ type: "profile-stop", file });
      const cpu = before && after ? cpuUse(before, after, { server: server.pid, self: process.pid, ...(postmaster ? { postmaster } : {}) }) : undefined;
      return { result, ...(cpu ? { cpu } : {}) };
    };
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        for (const route of ["projects", "task"] as Route[]) {
          const setup = new Map<Variant, Result[]>();
          for (const variant of VARIANTS) setup.set(variant, await prepare(round, route, variant));
          if (INSTRUMENT) for (const variant of VARIANTS) await byVariant[variant]!.call({ type: "stats" });
          log(`${ROUNDS > 1 ? `round ${round}/${ROUNDS}: ` : ""}${ROUTES[route].label}: measuring ${SLICES} slices of ${fmt(sliceS, 1)} s per variant, alternating...`);
          const slices = new Map<Variant, Slice[]>(VARIANTS.map((v) => [v, []]));
          for (let i = 0; i < SLICES; i++) {
            const order = i % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
            for (const variant of order) {
              // The profile of a variant's middle slice: long enough, and away from the edges.
              const file = profileDir && i === Math.floor(SLICES / 2) ? path.join(profileDir, `${route}-${variant}-${round}.cpuprofile`) : undefined;
              slices.get(variant)!.push(await slice(route, variant, file));
            }
          }
          // Each slice's req/s and the second of the minute it started at: a dip in a slice that
          // holds :00 is the keys leasing their budgets for the new rate window.
          for (const variant of VARIANTS) {
            log(`  ${variant} slices: ${slices.get(variant)!.map((s) => `${fmt(s.result.requests.total / Math.max(1e-9, s.result.duration))} @:${String(new Date(s.result.start).getUTCSeconds()).padStart(2, "0")}`).join(", ")}`);
          }
          for (const variant of VARIANTS) {
            const stats = INSTRUMENT ? (await byVariant[variant]!.call({ type: "stats" })).stats : undefined;
            runs.push({ round, route, variant, setup: setup.get(variant)!, ...combine(slices.get(variant)!), ...(stats ? { stats } : {}) });
          }
          const { rows } = await admin.query<{ max: number }>("select coalesce(max(count), 0)::int as max from rate_limit_counters where bucket like 'key:%'");
          maxKeyUse = Math.max(maxKeyUse, rows[0]?.max ?? 0);
          await sleep(1000);
        }
      }
    } finally {
      await admin.end();
    }

    /** The median run by throughput (the upper one of an even count). */
    const find = (route: Route, variant: Variant) => {
      const all = runs.filter((r) => r.route === route && r.variant === variant).sort((a, b) => a.result.rps - b.result.rps);
      return all[Math.floor(all.length / 2)]!;
    };
    if (ROUNDS > 1) {
      log();
      log(`req/s per round (the tables show each variant's median run):`);
      for (const route of ["projects", "task"] as Route[]) {
        for (const variant of VARIANTS) {
          const each = runs.filter((r) => r.route === route && r.variant === variant).map((r) => fmt(r.result.rps));
          log(`  ${ROUTES[route].label} ${variant}: ${each.join(", ")}`);
        }
      }
    }
    const widths = [22, 9, 10, 8, 8, 8, 7];
    log();
    log(pad(["route", "variant", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors"], widths));
    log("-".repeat(widths.reduce((a, b) => a + b + 2, -2)));
    for (const route of ["projects", "task"] as Route[]) {
      for (const variant of VARIANTS) {
        const r = find(route, variant).result;
        const cells = [ROUTES[route].label, variant, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), String(r.non2xx)];
        log(pad([...cells, String(r.errors + r.timeouts)], widths));
      }
    }
    log();
    const summary: Record<string, number | boolean | string> = {};
    let goalMet = true;
    for (const route of ["projects", "task"] as Route[]) {
      const f = find(route, "full").result;
      const b = find(route, "bare").result;
      // A round measures both variants in alternating slices, so its ratio holds the machine's
      // speed at that moment on both sides: the median of the rounds' ratios is the figure.
      // (Each variant's median run may come from different rounds, and rounds differ by more
      // than the stacks do on a machine with noisy neighbours.)
      const rounds = Array.from({ length: ROUNDS }, (_, i) => {
        const of = (variant: Variant) => runs.find((r) => r.round === i + 1 && r.route === route && r.variant === variant)!.result.rps;
        return of("bare") > 0 ? of("full") / of("bare") : 0;
      });
      const ratio = median(rounds);
      goalMet &&= ratio >= GOAL_RATIO;
      if (ROUNDS > 1) log(`${ROUTES[route].label}: full/bare per round ${rounds.map((r) => fmt(r, 3)).join(", ")}; of the median runs ${fmt(b.rps > 0 ? f.rps / b.rps : 0, 3)}`);
      log(`${ROUTES[route].label}: full/bare = ${fmt(ratio, 3)}${ROUNDS > 1 ? " (median of the rounds)" : ""}  (goal >= ${GOAL_RATIO}: ${ratio >= GOAL_RATIO ? "met" : "NOT met"})`);
      if (ATTRIBUTION) {
        const a = find(route, "bare-auth").result;
        log(`  bare-auth/bare = ${fmt(a.rps / b.rps, 3)} (a metering round trip per request, as the product once made), full/bare-auth = ${fmt(f.rps / a.rps, 3)}`);
        Object.assign(summary, { [`${route}_bare_auth_rps`]: Number(fmt(a.rps, 1)) });
      }
      Object.assign(summary, {
        [`${route}_full_rps`]: Number(fmt(f.rps, 1)),
        [`${route}_bare_rps`]: Number(fmt(b.rps, 1)),
        [`${route}_ratio`]: Number(fmt(ratio, 3)),
        [`${route}_ratio_min`]: Number(fmt(Math.min(...rounds), 3)),
        [`${route}_ratio_max`]: Number(fmt(Math.max(...rounds), 3)),
        [`${route}_full_p50_ms`]: f.p50,
        [`${route}_full_p99_ms`]: f.p99,
        [`${route}_bare_p50_ms`]: b.p50,
        [`${route}_bare_p99_ms`]: b.p99,
        [`${route}_full_non2xx`]: f.non2xx,
        [`${route}_bare_non2xx`]: b.non2xx,
      });
    }
    log(`goal (full stack keeps >= ${GOAL_RATIO * 100}% of the bare route's throughput): ${goalMet ? "met" : "NOT met"}`);
    log(`max requests on one key in one 60 s window: ${maxKeyUse} (limit ${READ_ONLY_LIMIT})`);
    if (runs.some((r) => r.cpu)) {
      log();
      log(`CPU during each measured run, in % of the machine's ${os.cpus().length} cores ("steal": taken by the hypervisor; "other": processes`);
      log("outside the benchmark), and CPU time per request, which holds whatever else ran on the machine:");
      const w = [22, 9, 5, 5, 5, 6, 8, 10, 5, 13, 15];
      log(pad(["route", "variant", "busy", "steal", "irq", "server", "postgres", "autocannon", "other", "server µs/req", "postgres µs/req"], w));
      const cores = os.cpus().length;
      const shown = (["projects", "task"] as Route[]).flatMap((route) => VARIANTS.map((variant) => find(route, variant)));
      for (const r of shown) {
        if (!r.cpu) continue;
        const u = r.cpu;
        const perRequest = (percent: number) => fmt(cpuUsPerRequest(r, percent, cores), 1);
        const shares = [u.busyPercent, u.stealPercent, u.irqPercent, u.serverPercent, u.postgresPercent, u.loadGeneratorPercent, u.otherPercent].map((x) => fmt(x));
        log(pad([ROUTES[r.route].label, r.variant, ...shares, perRequest(u.serverPercent), perRequest(u.postgresPercent)], w));
      }
      for (const r of shown) if (r.cpu?.topOthers.length) log(`  other during ${r.route} ${r.variant}: ${r.cpu.topOthers.join(", ")}`);
      // The server's CPU per request is the stack's own cost, apart from what PostgreSQL and the
      // load generator get of the shared cores (which req/s also moves with): its bare/full
      // ratio is the same comparison, measured on the server alone. It moves between runs too.
      for (const route of ["projects", "task"] as Route[]) {
        const [f, b] = [find(route, "full"), find(route, "bare")];
        if (!f.cpu || !b.cpu) continue;
        const [fu, bu] = [cpuUsPerRequest(f, f.cpu.serverPercent, cores), cpuUsPerRequest(b, b.cpu.serverPercent, cores)];
        log(`${ROUTES[route].label}: server CPU per request bare/full = ${fmt(bu / fu, 3)} (${fmt(bu, 1)} / ${fmt(fu, 1)} µs)`);
        Object.assign(summary, {
          [`${route}_full_server_cpu_us_per_req`]: Number(fmt(fu, 1)),
          [`${route}_bare_server_cpu_us_per_req`]: Number(fmt(bu, 1)),
          [`${route}_server_cpu_ratio`]: Number(fmt(bu / fu, 3)),
        });
      }
    }
    if (INSTRUMENT) {
      log();
      log("instruments (per measured run):");
      for (const run of runs) if (run === find(run.route, run.variant)) printStats(run);
    }

    // A run with failures measured something else than the route (429s: the rate limiter).
    const problems: string[] = [];
    for (const run of runs) {
      for (const [phase, r] of [...run.setup.map((s) => ["priming and warm-up", s] as const), ["run", run.result] as const]) {
        const name = `${run.route} ${run.variant} ${phase}`;
        if (count429(r) > 0) {
          problems.push(`${name}: ${count429(r)} responses were 429, the key spread is too thin (max ${maxKeyUse} per key per window); raise BENCH_ASSUMED_MAX_RPS`);
        } else if (r.non2xx > 0) {
          problems.push(`${name}: ${r.non2xx} non-2xx responses (${JSON.stringify(r.statusCodeStats)})`);
        }
        if (r.errors + r.timeouts > 0) problems.push(`${name}: ${r.errors} connection errors, ${r.timeouts} timeouts`);
      }
    }
    if (problems.length > 0) {
      for (const p of problems) process.stderr.write(`FAILED: ${p}\n`);
      return 1;
    }

    Object.assign(summary, {
      goal_min_ratio: GOAL_RATIO,
      goal_met: goalMet,
      max_requests_per_key_window: maxKeyUse,
      duration_s: DURATION_S,
      warmup_s: WARMUP_S,
      connections: CONNECTIONS,
      pool_max: POOL_MAX,
      rounds: ROUNDS,
      slices: SLICES,
    });
    log(JSON.stringify(summary));
    return 0;
  } finally {
    for (const s of servers) await s.stop().catch((err: unknown) => process.stderr.write(`stopping ${s.variant}: ${String(err)}\n`));
    await database?.stop().catch((err: unknown) => process.stderr.write(`stopping PostgreSQL: ${String(err)}\n`));
  }
}

/** A run's CPU time per request, in µs: `percent` of all `cores` is core-seconds per second, over its req/s. */
function cpuUsPerRequest(r: { result: Measured }, percent: number, cores: number): number {
  return ((percent / 100) * cores * 1e6) / Math.max(1, r.result.rps);
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:api failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
