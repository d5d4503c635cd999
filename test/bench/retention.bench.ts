// `npm run bench:retention`: what month partitions (migration 0022) cost and save on
// deployment_logs, against an unpartitioned copy of the same rows, both in the same run on a
// fresh, migrated database:
// - removing the expired share: the retention job (modules/retention, which drops whole
//   expired months) against `DELETE ... WHERE ts < <the same boundary>` on the copy (the same
//   rows go), and the VACUUM that DELETE leaves to do;
// - the retention job's time when nothing has expired (its hourly steady state);
// - inserting: batches of log lines as the ingest writes them (one unnest statement per batch),
//   into each table in turn;
// - reading a deployment's logs by deployment_id (the API's statement), on each table, before
//   the removal (every month of BENCH_DAYS) and after it (the kept months: the steady state).
// Rows: BENCH_ROWS (50,000,000) lines over the last BENCH_DAYS (180) days, BENCH_LINES_PER_DEPLOYMENT
// (2000) per deployment, made by generate_series in PostgreSQL. BENCH_INSERT_BATCHES (200) batches of
// BENCH_BATCH (500) lines per table; BENCH_READS (300) reads per table. DATABASE_URL: use that server.
import os from "node:os";
import pg from "pg";
import { runMigrations } from "@berth/db";
import { runRetention } from "../../apps/control-plane/src/modules/retention/retention.ts";
import { startBenchDatabase } from "./database.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const ROWS = Math.floor(setting("BENCH_ROWS", 50_000_000));
const DAYS = setting("BENCH_DAYS", 180);
const PER_DEPLOYMENT = Math.floor(setting("BENCH_LINES_PER_DEPLOYMENT", 2000));
const INSERT_BATCHES = Math.floor(setting("BENCH_INSERT_BATCHES", 200));
const BATCH = Math.floor(setting("BENCH_BATCH", 500));
const READS = Math.floor(setting("BENCH_READS", 300));
const RETENTION = { logDays: 90, agentEventDays: 30, commandDays: 90 };
const KEEP_ALL = { logDays: 0, agentEventDays: 0, commandDays: 0 };
const CHUNK = 1_000_000;
const DAY_MS = 86_400_000;

const log = (msg = "") => process.stderr.write(`${msg}\n`);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(" ");
const secondsSince = (t: number) => (performance.now() - t) / 1000;
const monthStart = (at: Date, k = 0) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + k, 1));

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

// Line i (1..ROWS) is dated (ROWS - i) / ROWS of DAYS ago; deployment floor(i / PER_DEPLOYMENT), one of 50 organisations.
const GENERATE = `
  insert into %T (organization_id, deployment_id, ts, level, message, step)
  select md5('org' || ((i / $4) % 50))::uuid, md5('dep' || (i / $4))::uuid,
    $3::timestamptz - (($5::bigint - i)::float8 / $5) * ($6 * interval '1 day'),
    'info', 'Step ' || (i % 37) || ': pulled layer sha256:' || md5(i::text), 'pulling_image'
  from generate_series($1::bigint, $2::bigint) i`;

const INSERT_BATCH = `
  insert into %T (organization_id, deployment_id, ts, level, message, step, data)
  select r.o, r.d, r.t, 'info', r.m, 'pulling_image', '{}'::jsonb
  from unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[]) as r(o, d, t, m)`;

const READ = "select id, deployment_id, ts, level, message, step, data from %T where deployment_id = $1 order by id limit 500";

const sql = (text: string, table: string) => text.replaceAll("%T", table);

async function main() {
  log(`bench:retention: ${ROWS.toLocaleString("en")} rows over ${DAYS} days; load ${load()} (${os.cpus().length} cores)`);
  const db = await startBenchDatabase();
  const loadAtStart = load();
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  pool.on("error", () => {}); // an idle connection cut as the server stops
  try {
    await runMigrations(db.url);
    const now = new Date();
    // The months of the rows, as the hourly job made them over time.
    const firstMonth = monthStart(new Date(now.getTime() - DAYS * DAY_MS));
    for (let m = firstMonth; m <= now; m = monthStart(m, 1)) await runRetention(pool, KEEP_ALL, m);

    let t = performance.now();
    for (let a = 1; a <= ROWS; a += CHUNK) {
      const b = Math.min(ROWS, a + CHUNK - 1);
      await pool.query(sql(GENERATE, "deployment_logs"), [a, b, now, PER_DEPLOYMENT, ROWS, DAYS]);
      if ((b / CHUNK) % 5 === 0 || b === ROWS) log(`  generated ${b.toLocaleString("en")} rows (${secondsSince(t).toFixed(0)} s)`);
    }
    const generateS = secondsSince(t);
    t = performance.now();
    await pool.query("create table deployment_logs_flat (like deployment_logs including defaults)");
    await pool.query("insert into deployment_logs_flat select * from deployment_logs");
    await pool.query("alter table deployment_logs_flat add primary key (id)");
    await pool.query("create index deployment_logs_flat_deployment_idx on deployment_logs_flat (deployment_id, id)");
    await pool.query("create index deployment_logs_flat_org_tx_idx on deployment_logs_flat (organization_id, tx, id)");
    await pool.query("vacuum analyze deployment_logs_flat");
    await pool.query("vacuum analyze deployment_logs");
    log(`  unpartitioned copy made in ${secondsSince(t).toFixed(0)} s`);
    const partitions = (await pool.query("select count(*)::int as n from pg_inherits where inhparent = 'deployment_logs'::regclass")).rows[0].n as number;

    // Reads: a deployment's logs, random deployments (of the newest `share` of them), alternating tables.
    const deployments = Math.ceil(ROWS / PER_DEPLOYMENT);
    async function reads(share: number): Promise<Record<string, number[]>> {
      const ms: Record<string, number[]> = { deployment_logs: [], deployment_logs_flat: [] };
      for (let r = 0; r < READS; r++) {
        const pick = deployments - 1 - Math.floor(Math.random() * deployments * share);
        const dep = (await pool.query("select md5('dep' || $1::int)::uuid as id", [pick])).rows[0].id as string;
        for (const table of r % 2 === 0 ? ["deployment_logs", "deployment_logs_flat"] : ["deployment_logs_flat", "deployment_logs"]) {
          const s = performance.now();
          await pool.query(sql(READ, table), [dep]);
          ms[table]!.push(performance.now() - s);
        }
      }
      return ms;
    }
    const readMs = await reads(1);

    // Inserts: batches of current lines, alternating tables.
    const insertS: Record<string, number> = { deployment_logs: 0, deployment_logs_flat: 0 };
    for (let i = 0; i < INSERT_BATCHES; i++) {
      const dep = Math.floor(Math.random() * deployments);
      const ids = (await pool.query("select md5('org' || ($1::int % 50))::uuid as o, md5('dep' || $1::int)::uuid as d", [dep])).rows[0] as { o: string; d: string };
      const ts = new Date().toISOString();
      const values = [Array(BATCH).fill(ids.o), Array(BATCH).fill(ids.d), Array(BATCH).fill(ts), Array.from({ length: BATCH }, (_, k) => `new line ${i}.${k}`)];
      for (const table of i % 2 === 0 ? ["deployment_logs", "deployment_logs_flat"] : ["deployment_logs_flat", "deployment_logs"]) {
        const s = performance.now();
        await pool.query(sql(INSERT_BATCH, table), values);
        insertS[table] = insertS[table]! + secondsSince(s);
      }
    }
    const insertRate = (table: string) => (INSERT_BATCHES * BATCH) / insertS[table]!;

    // Removal of the expired share: the same rows on both sides (those of the months the job drops).
    const boundary = new Date(Math.max(...(await expiredMonthEnds(pool, now))));
    const expired = Number((await pool.query("select count(*) as n from deployment_logs_flat where ts < $1", [boundary])).rows[0].n);
    t = performance.now();
    const run = await runRetention(pool, RETENTION, now);
    const jobS = secondsSince(t);
    t = performance.now();
    const deleted = (await pool.query("delete from deployment_logs_flat where ts < $1", [boundary])).rowCount ?? 0;
    const deleteS = secondsSince(t);
    t = performance.now();
    await pool.query("vacuum deployment_logs_flat");
    const vacuumS = secondsSince(t);
    const left = Number((await pool.query("select count(*) as n from deployment_logs where ts < $1", [boundary])).rows[0].n);
    if (deleted !== expired || left !== 0) throw new Error(`the two sides removed different rows: delete ${deleted}, expected ${expired}, left in partitions ${left}`);
    t = performance.now();
    await runRetention(pool, RETENTION, now);
    const steadyS = secondsSince(t);
    // The steady state: only the kept months left (fewer partitions to visit), reads of kept deployments.
    const partitionsAfter = (await pool.query("select count(*)::int as n from pg_inherits where inhparent = 'deployment_logs'::regclass")).rows[0].n as number;
    const afterMs = await reads((ROWS - expired) / ROWS);

    const rows: [string, string, string, string][] = [
      ["", "partitioned (monthly)", "unpartitioned", "ratio"],
      ["remove expired rows", `${jobS.toFixed(2)} s (job: drop ${run.dropped.filter((p) => p.startsWith("deployment_logs")).length} months)`, `${deleteS.toFixed(2)} s DELETE`, `${(deleteS / jobS).toFixed(0)}x`],
      ["  + vacuum after", "-", `${vacuumS.toFixed(2)} s`, `${((deleteS + vacuumS) / jobS).toFixed(0)}x`],
      ["retention job, nothing expired", `${steadyS.toFixed(3)} s`, "-", "-"],
      ["insert (rows/s)", insertRate("deployment_logs").toFixed(0), insertRate("deployment_logs_flat").toFixed(0), (insertRate("deployment_logs") / insertRate("deployment_logs_flat")).toFixed(2)],
      ["read a deployment's logs, median ms", median(readMs.deployment_logs!).toFixed(2), median(readMs.deployment_logs_flat!).toFixed(2), (median(readMs.deployment_logs!) / median(readMs.deployment_logs_flat!)).toFixed(2)],
      ["read, p99 ms", percentile(readMs.deployment_logs!, 99).toFixed(2), percentile(readMs.deployment_logs_flat!, 99).toFixed(2), (percentile(readMs.deployment_logs!, 99) / percentile(readMs.deployment_logs_flat!, 99)).toFixed(2)],
      [`read after removal (${partitionsAfter} partitions), median ms`, median(afterMs.deployment_logs!).toFixed(2), median(afterMs.deployment_logs_flat!).toFixed(2), (median(afterMs.deployment_logs!) / median(afterMs.deployment_logs_flat!)).toFixed(2)],
      ["read after removal, p99 ms", percentile(afterMs.deployment_logs!, 99).toFixed(2), percentile(afterMs.deployment_logs_flat!, 99).toFixed(2), (percentile(afterMs.deployment_logs!, 99) / percentile(afterMs.deployment_logs_flat!, 99)).toFixed(2)],
    ];
    const width = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
    const out = (s: string) => process.stdout.write(`${s}\n`);
    out("");
    out(`bench:retention on ${db.description}`);
    out(`${ROWS.toLocaleString("en")} deployment_logs rows over ${DAYS} days (${partitions} partitions, DEFAULT included), generated in ${generateS.toFixed(0)} s;`);
    out(`expired (months wholly older than ${RETENTION.logDays} days, before ${boundary.toISOString().slice(0, 10)}): ${expired.toLocaleString("en")} rows; load at start ${loadAtStart}, now ${load()}`);
    out("");
    for (const r of rows) out(r.map((c, i) => (i === 0 ? c.padEnd(width[i]!) : c.padStart(width[i]!))).join("  "));
    out("");
    out(
      JSON.stringify({
        rows: ROWS,
        expired_rows: expired,
        partitions,
        generate_s: round(generateS),
        drop_job_s: round(jobS),
        delete_s: round(deleteS),
        delete_vacuum_s: round(vacuumS),
        delete_over_drop_ratio: round(deleteS / jobS),
        job_steady_s: round(steadyS),
        insert_partitioned_rows_per_s: Math.round(insertRate("deployment_logs")),
        insert_unpartitioned_rows_per_s: Math.round(insertRate("deployment_logs_flat")),
        insert_partitioned_over_unpartitioned_ratio: round(insertRate("deployment_logs") / insertRate("deployment_logs_flat")),
        read_partitioned_median_ms: round(median(readMs.deployment_logs!)),
        read_unpartitioned_median_ms: round(median(readMs.deployment_logs_flat!)),
        read_partitioned_over_unpartitioned_ratio: round(median(readMs.deployment_logs!) / median(readMs.deployment_logs_flat!)),
        read_partitioned_p99_ms: round(percentile(readMs.deployment_logs!, 99)),
        read_unpartitioned_p99_ms: round(percentile(readMs.deployment_logs_flat!, 99)),
        partitions_after_removal: partitionsAfter,
        read_after_removal_partitioned_median_ms: round(median(afterMs.deployment_logs!)),
        read_after_removal_unpartitioned_median_ms: round(median(afterMs.deployment_logs_flat!)),
        read_after_removal_ratio: round(median(afterMs.deployment_logs!) / median(afterMs.deployment_logs_flat!)),
        load_avg_1m_start: Number(loadAtStart.split(" ")[0]),
        load_avg_1m_end: os.loadavg()[0]!,
      }),
    );
  } finally {
    await pool.end();
    await db.stop();
  }
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/** The ends of the months the job will drop at `now` (as dates in ms); the boundary is the latest. */
async function expiredMonthEnds(pool: pg.Pool, now: Date): Promise<number[]> {
  const cutoff = now.getTime() - RETENTION.logDays * DAY_MS;
  const { rows } = await pool.query<{ name: string }>("select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'deployment_logs'::regclass");
  const ends = rows
    .map((r) => /_p(\d{4})(\d{2})$/.exec(r.name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Date.UTC(Number(m[1]), Number(m[2]), 1))
    .filter((end) => end <= cutoff);
  if (ends.length === 0) throw new Error(`no month is wholly older than ${RETENTION.logDays} days: raise BENCH_DAYS`);
  return ends;
}

await main();
