// `npm run bench:snapshot`: what a pre-deploy snapshot and its rollback cost, against one
// plain pg_dump -Fc of the same data, and what it adds to a deploy, in one run on the real
// Docker engine with the test images (the agent's own code: takeSnapshot, rollbackToSnapshot,
// the deploy handler through the executor harness).
//
// One environment is deployed (a repository with one module), then filled: a table of
// BENCH_DB_MB of rows (generate_series) in its database and BENCH_FILES_MB of 1 MiB files
// in its file store (named by their SHA-1, as Odoo does). Measured, in this order:
//   pg_dump      docker exec pg_dump -Fc of the database into a file on the host
//   pg_restore   that dump into a new database (the dump-based rollback, for comparison)
//   tar          the file store into a tar file (the copy-based file store snapshot)
//   strategies   CREATE DATABASE ... TEMPLATE with STRATEGY WAL_LOG (PostgreSQL 15's default)
//                and FILE_COPY (what copyDatabase uses), twice each, the ERP stopped
//   snapshot     takeSnapshot: the ERP stopped, CREATE DATABASE ... TEMPLATE, hard-link
//                tree of the file store, the ERP started again
//   rollback     the ERP stopped, rollbackToSnapshot (the snapshot database renamed in, a
//                data dir with the snapshot's file store links swapped in), the ERP started
//                again, then the failed database dropped (reported apart: until serving)
//   deploys      BENCH_DEPLOYS pairs of deploys that upgrade the module (a new manifest
//                version each time), alternately with and without the pre-deploy snapshot
// Goals: snapshot + rollback <= 1.5 x pg_dump; a deploy with snapshot <= 1.3 x without.
// The last line is one JSON object, units in its keys.
//
// Environment: BENCH_DB_MB (1024), BENCH_FILES_MB (1024), BENCH_DEPLOYS (2),
// BERTH_DOCKER_SOCKET. Needs `bash test/images/build.sh` first.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createWriteStream, mkdtempSync } from "node:fs";
import { mkdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createExecutorHarness,
  createGitRepository,
  deployParams,
  finishSuite,
  requireTestImages,
} from "../../apps/agent/src/executor/executor.test-helpers.ts";
import { environmentLayout } from "../../apps/agent/src/executor/environment/environment-layout.ts";
import { findErpContainer } from "../../apps/agent/src/executor/environment/erp-container.ts";
import { pruneSnapshots, rollbackToSnapshot, takeSnapshot } from "../../apps/agent/src/executor/environment/pre-deploy-snapshot.ts";
import { copyDatabase, dropDatabase } from "../../apps/agent/src/executor/environment/database-swap.ts";
import type { PreDeploySettings } from "../../apps/agent/src/executor/runner/executor-deps.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";

const DB_MB = Math.round(setting("BENCH_DB_MB", 1024, 1));
const FILES_MB = Math.round(setting("BENCH_FILES_MB", 1024, 0));
const DEPLOYS = Math.round(setting("BENCH_DEPLOYS", 2, 1));
const SUITE = "bench-snapshot";
const log = (line = "") => process.stdout.write(`${line}\n`);
const sec = (ms: number) => (ms / 1000).toFixed(2);
const T0 = performance.now();
/** BENCH_VERBOSE=1 prints the agent's log lines with the time since start. */
const noLog = (_level: string, message: string) => {
  if (process.env.BENCH_VERBOSE === "1") log(`  [${sec(performance.now() - T0)}] ${message}`);
};

async function timed<T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await work();
  return { ms: performance.now() - t0, value };
}

async function main(): Promise<void> {
  const preDeploy: PreDeploySettings = { snapshots: true, retention: 2 };
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 120_000, healthIntervalMs: 200 }, {}, preDeploy);
  const gitDir = mkdtempSync(join(tmpdir(), "berth-bench-snapshot-"));
  const work = mkdtempSync(join(tmpdir(), "berth-bench-snapshot-work-"));
  const env = randomUUID();
  const layout = environmentLayout(h.stateDir, env);
  try {
    await requireTestImages(h.docker);
    const repo = await createGitRepository(gitDir);
    const manifest = (v: string) => `{'name': 'Bench', 'version': '${v}'}\n`;
    let version = 0;
    const commit = () => {
      version += 1;
      return repo.commit(`v${version}`, { "berth_bench/__manifest__.py": manifest(`1.${version}`) });
    };
    const deploy = async (modules?: string[]) => {
      const run = await h.run(
        "deploy",
        deployParams(env, {
          git: { url: repo.url, branch: "main", commit: await commit() },
          resources: { cpu_cores: 2, ram_mb: 1024, disk_gb: 20, workers: 0 },
          ...(modules === undefined ? {} : { modules: { upgrade: modules } }),
        }),
      );
      if (!run.outcome.ok) throw new Error(`deploy failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
      return run.outcome.result;
    };
    await deploy();
    await deploy(["berth_bench"]);

    // ---- data ----
    const psql = async (sql: string, database = "odoo") => {
      const r = await h.docker.exec(layout.dbContainer, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql], {
        deadlineMs: 60 * 60_000,
      });
      if (r.exitCode !== 0) throw new Error(r.stderr);
      return r.stdout.trim();
    };
    const fill = await timed(async () => {
      // About 1 KiB per row with its index and TOAST-free text: 1024 rows per MiB, in batches.
      await psql("CREATE TABLE bench_data (id bigserial PRIMARY KEY, ref int NOT NULL, body text NOT NULL)");
      const perBatch = 100_000;
      for (let done = 0; ; ) {
        const bytes = Number(await psql("SELECT pg_database_size('odoo')"));
        if (bytes >= DB_MB * 1024 * 1024) break;
        await psql(
          `INSERT INTO bench_data (ref, body) SELECT g, md5(g::text) || repeat(md5((g * 7)::text), 28) FROM generate_series(${done + 1}, ${done + perBatch}) g`,
        );
        done += perBatch;
      }
      await psql("CREATE INDEX ON bench_data (ref)");
      await psql("VACUUM ANALYZE bench_data");
      const store = join(layout.dataDir, "filestore", "odoo");
      for (let i = 0; i < FILES_MB; i++) {
        const content = randomBytes(1024 * 1024);
        const sha = createHash("sha1").update(content).digest("hex");
        await mkdir(join(store, sha.slice(0, 2)), { recursive: true });
        await writeFile(join(store, sha.slice(0, 2), sha), content);
      }
    });
    const dbBytes = Number(await psql("SELECT pg_database_size('odoo')"));
    log(`data: database ${(dbBytes / 2 ** 20).toFixed(0)} MiB, file store ${FILES_MB} MiB, made in ${sec(fill.ms)} s`);

    // ---- dump-based snapshot, for comparison ----
    const dumpFile = join(work, "odoo.dump");
    const dump = await timed(async () => {
      const sink = createWriteStream(dumpFile);
      const r = await h.docker.exec(layout.dbContainer, ["pg_dump", "-U", "odoo", "--format=custom", "--dbname", "odoo"], {
        deadlineMs: 60 * 60_000,
        stdout: sink,
      });
      if (r.exitCode !== 0) throw new Error(r.stderr);
    });
    const dumpBytes = (await stat(dumpFile)).size;
    await psql("CREATE DATABASE bench_restore", "postgres");
    const restore = await timed(async () => {
      const { createReadStream } = await import("node:fs");
      const r = await h.docker.exec(layout.dbContainer, ["pg_restore", "-U", "odoo", "--no-owner", "--single-transaction", "--exit-on-error", "--dbname", "bench_restore"], {
        deadlineMs: 60 * 60_000,
        stdin: createReadStream(dumpFile),
      });
      if (r.exitCode !== 0) throw new Error(r.stderr);
    });
    await psql("DROP DATABASE bench_restore", "postgres");
    await rm(dumpFile, { force: true });
    const tar = await timed(async () => {
      const { execFile } = await import("node:child_process");
      await new Promise<void>((resolve, reject) =>
        execFile("tar", ["-cf", join(work, "filestore.tar"), "-C", join(layout.dataDir, "filestore"), "odoo"], (error) => (error ? reject(error) : resolve())),
      );
    });
    await rm(join(work, "filestore.tar"), { force: true });

    // ---- the agent's snapshot and rollback ----
    const [db] = await h.docker.listContainers({ label: [`berth.environment_id=${env}`, "berth.role=db"] });
    if (db === undefined) throw new Error("no database container");
    const stopErp = async () => {
      const erp = await findErpContainer(h.docker, layout);
      if (erp === null) return async () => undefined;
      await h.docker.stopContainer(erp.id, 20);
      return async () => h.docker.startContainer(erp.id);
    };
    // The two ways PostgreSQL 15+ copies a template, on the same data, the ERP stopped.
    const strategies: Record<"file_copy" | "wal_log", number> = { file_copy: 0, wal_log: 0 };
    {
      const restart = await stopErp();
      for (const strategy of ["wal_log", "file_copy", "wal_log", "file_copy"] as const) {
        const name = `odoo_predeploy_${randomUUID().replace(/-/g, "")}`;
        const t = await timed(() => copyDatabase(h.docker, db.id, "odoo", name, 60 * 60_000, strategy));
        strategies[strategy] += t.ms / 2;
        await dropDatabase(h.docker, db.id, name);
      }
      await restart();
    }
    const snap = await timed(() =>
      takeSnapshot(h.docker, db.id, layout, {
        deploymentId: randomUUID(),
        now: new Date(),
        modules: {},
        deadlineMs: 60 * 60_000,
        log: noLog,
        hooks: { stopErp },
      }),
    );
    await psql("INSERT INTO bench_data (ref, body) VALUES (-1, 'written after the snapshot')");
    let serving = 0;
    const rollback = await timed(async () => {
      const t0 = performance.now();
      const restart = await stopErp();
      const finish = await rollbackToSnapshot(h.docker, db.id, layout, snap.value, { now: new Date(), deadlineMs: 60 * 60_000, log: noLog });
      await restart();
      serving = performance.now() - t0;
      await finish();
    });
    const gone = await psql("SELECT count(*) FROM bench_data WHERE ref = -1");
    if (gone !== "0") throw new Error("the rollback did not bring the database back to the snapshot");
    await pruneSnapshots(h.docker, db.id, layout, 0, noLog);

    // ---- deploys with and without the snapshot ----
    const withSnap: number[] = [];
    const without: number[] = [];
    for (let i = 0; i < DEPLOYS; i++) {
      for (const snapshots of i % 2 === 0 ? [true, false] : [false, true]) {
        preDeploy.snapshots = snapshots;
        const d = await timed(() => deploy(["berth_bench"]));
        if ((d.value.snapshot_id !== null) !== snapshots) throw new Error("the deploy did not do what was asked of its snapshot");
        (snapshots ? withSnap : without).push(d.ms);
      }
    }

    // ---- report ----
    const snapshotPlusRollback = snap.ms + rollback.ms;
    const ratio = snapshotPlusRollback / dump.ms;
    const deployRatio = median(withSnap) / median(without);
    log("");
    log(`${"measure".padEnd(44)} ${"seconds".padStart(9)}`);
    const row = (what: string, ms: number) => log(`${what.padEnd(44)} ${sec(ms).padStart(9)}`);
    row(`pg_dump -Fc (${(dumpBytes / 2 ** 20).toFixed(0)} MiB out)`, dump.ms);
    row("pg_restore of that dump (dump-based rollback)", restore.ms);
    row("tar of the file store", tar.ms);
    row("template copy, STRATEGY WAL_LOG (mean of 2)", strategies.wal_log);
    row("template copy, STRATEGY FILE_COPY (mean of 2)", strategies.file_copy);
    row("snapshot: template copy + hard links", snap.ms);
    row("rollback: snapshot renamed in, ERP serving", serving);
    row("rollback: ... and the failed database dropped", rollback.ms);
    row("snapshot + rollback", snapshotPlusRollback);
    row("dump-based: pg_dump + pg_restore", dump.ms + restore.ms);
    row(`deploy with snapshot (median of ${withSnap.length})`, median(withSnap));
    row(`deploy without snapshot (median of ${without.length})`, median(without));
    log("");
    log(`snapshot + rollback = ${ratio.toFixed(2)} x pg_dump (goal <= 1.5): ${ratio <= 1.5 ? "met" : "NOT met"}`);
    log(`deploy with snapshot = ${deployRatio.toFixed(2)} x without (goal <= 1.3): ${deployRatio <= 1.3 ? "met" : "NOT met"}`);
    log(
      JSON.stringify({
        db_mb: Math.round(dbBytes / 2 ** 20),
        files_mb: FILES_MB,
        pg_dump_s: +sec(dump.ms),
        pg_dump_out_mb: Math.round(dumpBytes / 2 ** 20),
        pg_restore_s: +sec(restore.ms),
        filestore_tar_s: +sec(tar.ms),
        template_copy_wal_log_s: +sec(strategies.wal_log),
        template_copy_file_copy_s: +sec(strategies.file_copy),
        file_copy_over_wal_log: +(strategies.file_copy / strategies.wal_log).toFixed(3),
        snapshot_s: +sec(snap.ms),
        rollback_s: +sec(rollback.ms),
        rollback_until_serving_s: +sec(serving),
        snapshot_plus_rollback_over_pg_dump: +ratio.toFixed(3),
        snapshot_goal_met: ratio <= 1.5,
        deploy_with_snapshot_s: withSnap.map((ms) => +sec(ms)),
        deploy_without_snapshot_s: without.map((ms) => +sec(ms)),
        deploy_with_over_without: +deployRatio.toFixed(3),
        deploy_goal_met: deployRatio <= 1.3,
      }),
    );
  } finally {
    await finishSuite(SUITE, h, gitDir, work);
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
