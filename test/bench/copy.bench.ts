// `npm run bench:copy`: what copy-from (backup "fresh", same server) costs against the plain
// way to copy the same data, in one run on the real Docker engine with the test images (the
// agent's own restore handler with live_source, through the executor harness).
//
// Two environments are deployed on one server; the source is filled: a table of BENCH_DB_MB
// of rows in its database and BENCH_FILES_MB of 1 MiB files in its file store (named by their
// SHA-1 and owned by the ERP's user, as Odoo writes them). Measured, in this order:
//   plain      `docker exec pg_dump -Fc | docker exec -i pg_restore` of the source's database
//              into a new database of the target's PostgreSQL, plus `cp -r` of the file store,
//              with pg_dump's default compression and with -Z0 (each twice: before and after
//              the copy; the median is that way's baseline)
//   copy-from  the restore handler with live_source: pg_dump streamed into pg_restore, odoo
//              neutralize, re-key, the file store copied by name, swap, ERP started, until
//              its health check passes (serving); then the previous database dropped
// Goal: copy-from until serving <= 1.3 x the faster plain way. The last line is one JSON object,
// units in keys.
//
// Environment: BENCH_DB_MB (1024), BENCH_FILES_MB (1024), BENCH_VERBOSE=1 (the agent's log
// lines), BERTH_DOCKER_SOCKET. Needs `bash test/images/build.sh` first.
import { execFile } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { chown, mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { StepId } from "@berth/protocol";
import { createExecutorHarness, deployParams, ERP_IMAGE, finishSuite, requireTestImages } from "../../apps/agent/src/executor/executor.test-helpers.ts";
import { environmentLayout } from "../../apps/agent/src/executor/environment/environment-layout.ts";
import { erpUserOf } from "../../apps/agent/src/executor/environment/erp-image-user.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const DB_MB = Math.round(setting("BENCH_DB_MB", 1024, 1));
const FILES_MB = Math.round(setting("BENCH_FILES_MB", 1024, 0));
const SUITE = "bench-copy";
const GOAL = 1.3;
const log = (line = "") => process.stdout.write(`${line}\n`);
const sec = (ms: number) => (ms / 1000).toFixed(2);
const sh = promisify(execFile);

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await work();
  return { ms: performance.now() - t0, value };
}

async function main(): Promise<void> {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 120_000, healthIntervalMs: 100, dataTransferMs: 60 * 60_000 });
  const source = randomUUID();
  const target = randomUUID();
  const src = environmentLayout(h.stateDir, source);
  const tgt = environmentLayout(h.stateDir, target);
  try {
    await requireTestImages(h.docker);
    for (const env of [source, target]) {
      const run = await h.run("deploy", deployParams(env, { resources: { cpu_cores: 2, ram_mb: 1024, disk_gb: 20, workers: 0 } }));
      if (!run.outcome.ok) throw new Error(`deploy failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
    }

    // ---- data ----
    const psql = async (container: string, sql: string, database = "odoo") => {
      const r = await h.docker.exec(container, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], { deadlineMs: 60 * 60_000 });
      if (r.exitCode !== 0) throw new Error(r.stderr);
      return r.stdout.trim();
    };
    const fill = await timed(async () => {
      // About 1 KiB per row with its index: 1024 rows per MiB, in batches.
      await psql(src.dbContainer, "CREATE TABLE bench_data (id bigserial PRIMARY KEY, ref int NOT NULL, body text NOT NULL)");
      for (let done = 0; Number(await psql(src.dbContainer, "SELECT pg_database_size('odoo')")) < DB_MB * 2 ** 20; done += 100_000) {
        await psql(src.dbContainer, `INSERT INTO bench_data (ref, body) SELECT g, md5(g::text) || repeat(md5((g * 7)::text), 28) FROM generate_series(${done + 1}, ${done + 100_000}) g`);
      }
      await psql(src.dbContainer, "CREATE INDEX ON bench_data (ref)");
      await psql(src.dbContainer, "VACUUM ANALYZE bench_data");
      const user = await erpUserOf(h.docker, ERP_IMAGE);
      const store = join(src.dataDir, "filestore", "odoo");
      for (let i = 0; i < FILES_MB; i++) {
        const content = randomBytes(2 ** 20);
        const sha = createHash("sha1").update(content).digest("hex");
        const dir = join(store, sha.slice(0, 2));
        await mkdir(dir, { recursive: true });
        await chown(dir, user.uid, user.gid);
        await writeFile(join(dir, sha), content);
        await chown(join(dir, sha), user.uid, user.gid);
      }
    });
    const dbBytes = Number(await psql(src.dbContainer, "SELECT pg_database_size('odoo')"));
    log(`data: database ${(dbBytes / 2 ** 20).toFixed(0)} MiB, file store ${FILES_MB} MiB, made in ${sec(fill.ms)} s`);

    // ---- the plain way: pg_dump | pg_restore, cp -r ----
    const plain = async (compress: "default" | "none") => {
      await psql(tgt.dbContainer, "DROP DATABASE IF EXISTS bench_plain", "postgres");
      await psql(tgt.dbContainer, "CREATE DATABASE bench_plain", "postgres");
      const copyDir = join(tgt.dir, "bench-plain-filestore");
      await rm(copyDir, { recursive: true, force: true });
      const db = await timed(() =>
        sh("sh", ["-c", `docker exec ${src.dbContainer} pg_dump -U odoo -Fc${compress === "none" ? " -Z0" : ""} odoo | docker exec -i ${tgt.dbContainer} pg_restore -U odoo --no-owner --single-transaction --exit-on-error -d bench_plain`], {
          maxBuffer: 2 ** 24,
        }),
      );
      const files = await timed(() => sh("cp", ["-r", join(src.dataDir, "filestore"), copyDir]));
      await psql(tgt.dbContainer, "DROP DATABASE bench_plain", "postgres");
      await rm(copyDir, { recursive: true, force: true });
      return { db: db.ms, files: files.ms, total: db.ms + files.ms };
    };
    const plainBefore = await plain("default");
    const plainZ0Before = await plain("none");

    // ---- copy-from ----
    const t0 = performance.now();
    let serving = 0;
    const steps: Partial<Record<StepId, number>> = {};
    const run = await h.run(
      "restore",
      { deployment_id: randomUUID(), environment_id: target, backup_id: randomUUID(), live_source: { environment_id: source }, copy: { base_url: "https://staging.bench.example" } },
      {
        onStep: (step) => {
          steps[step] = performance.now() - t0;
          // The health check passed: the copy serves; "completed" only drops the previous database.
          if (step === "completed") serving = performance.now() - t0;
        },
      },
    );
    const total = performance.now() - t0;
    if (!run.outcome.ok) throw new Error(`copy failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
    if (process.env.BENCH_VERBOSE === "1") for (const l of run.logs) log(`  ${l.message}`);
    const copied = await psql(tgt.dbContainer, "SELECT count(*) FROM bench_data");
    if (copied !== (await psql(src.dbContainer, "SELECT count(*) FROM bench_data"))) throw new Error("the copy does not have the source's rows");

    const plainAfter = await plain("default");
    const plainZ0After = await plain("none");
    const baselineFc = median([plainBefore.total, plainAfter.total]);
    const baselineZ0 = median([plainZ0Before.total, plainZ0After.total]);
    // Held to the faster of the two plain ways.
    const baseline = Math.min(baselineFc, baselineZ0);
    const ratio = serving / baseline;
    const phase = (from: StepId, to: StepId) => (steps[to] ?? 0) - (steps[from] ?? 0);

    // ---- report ----
    log("");
    log(`${"measure".padEnd(52)} ${"seconds".padStart(9)}`);
    const row = (what: string, ms: number) => log(`${what.padEnd(52)} ${sec(ms).padStart(9)}`);
    row("plain: pg_dump -Fc | pg_restore (before, after)", median([plainBefore.db, plainAfter.db]));
    row("plain: pg_dump -Fc -Z0 | pg_restore (before, after)", median([plainZ0Before.db, plainZ0After.db]));
    row("plain: cp -r of the file store (4 runs)", median([plainBefore.files, plainAfter.files, plainZ0Before.files, plainZ0After.files]));
    row("plain -Fc: both (median of 2)", baselineFc);
    row("plain -Fc -Z0: both (median of 2)", baselineZ0);
    row("copy-from: dump | load, neutralize, file store", phase("initializing_database", "starting_container"));
    row("copy-from: swap and ERP start", phase("starting_container", "health_check"));
    row("copy-from: health check", phase("health_check", "completed"));
    row("copy-from: until the copy serves", serving);
    row("copy-from: ... and the previous database dropped", total);
    log("");
    log(`copy-from until serving = ${(serving / baselineFc).toFixed(2)} x plain -Fc, ${(serving / baselineZ0).toFixed(2)} x plain -Fc -Z0`);
    log(`against the faster plain way: ${ratio.toFixed(2)} x (goal <= ${GOAL}): ${ratio <= GOAL ? "met" : "NOT met"}`);
    log(
      JSON.stringify({
        db_mb: Math.round(dbBytes / 2 ** 20),
        files_mb: FILES_MB,
        plain_dump_restore_s: [plainBefore.db, plainAfter.db].map((ms) => +sec(ms)),
        plain_z0_dump_restore_s: [plainZ0Before.db, plainZ0After.db].map((ms) => +sec(ms)),
        plain_cp_s: [plainBefore.files, plainAfter.files, plainZ0Before.files, plainZ0After.files].map((ms) => +sec(ms)),
        plain_fc_s: +sec(baselineFc),
        plain_fc_z0_s: +sec(baselineZ0),
        copy_over_plain_fc: +(serving / baselineFc).toFixed(3),
        copy_over_plain_fc_z0: +(serving / baselineZ0).toFixed(3),
        copy_until_serving_s: +sec(serving),
        copy_total_s: +sec(total),
        copy_over_faster_plain: +ratio.toFixed(3),
        goal_met: ratio <= GOAL,
      }),
    );
  } finally {
    await finishSuite(SUITE, h);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
