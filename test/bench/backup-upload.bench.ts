// `npm run bench:backup-upload`: how fast a backup file travels from the agent's upload
// code (uploadFile, as the backup command runs it) into the control plane's backup store on
// loopback (the real route: token check, streamed into the local store while its SHA-256
// is computed, fsync, rename, the record updated), against plain baselines measured in the
// same run on the same file and disk:
//   raw PUT    a bare node:http server that writes the request body to a file and fsyncs
//              it, fed by a bare node:http client (what curl -T into a minimal server does)
//   disk copy  the file read and written to another file, then fsynced
// Each run measures the three in a rotating order, each after a `sync` (so none pays for the
// writeback of what another wrote). Goal: the upload >= 100 MB/s. The last line is one JSON
// object, units in its keys.
//
// Environment: BENCH_UPLOAD_MB (1024), BENCH_UPLOAD_RUNS (3; the median is reported),
// DATABASE_URL (else an embedded PostgreSQL).
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createDb, runMigrations } from "@berth/db";
import { buildApp, createDemoOrganization, createObjectStore } from "@berth/control-plane";
import { uploadFile } from "../../apps/agent/src/executor/backup/backup-transfer.ts";
import { instanceSecret } from "../../apps/control-plane/src/db/instance-secrets.ts";
import { createBackupLinks } from "../../apps/control-plane/src/modules/backups/backup-links.ts";
import { startBenchDatabase } from "./database.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";
import { fsyncFile, makeFile, rawPut, rawServer } from "./upload-baseline.ts";

const MB = Math.round(setting("BENCH_UPLOAD_MB", 1024, 1));
const RUNS = Math.round(setting("BENCH_UPLOAD_RUNS", 3, 1));
const GOAL_MB_S = 100;
const log = (line = "") => process.stdout.write(`${line}\n`);
async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const work = await mkdtemp(path.join(os.tmpdir(), "berth-bench-upload-"));
  const database = await startBenchDatabase();
  try {
    const file = path.join(work, "db.dump");
    log(`bench:backup-upload: ${MB} MiB file, ${RUNS} runs each (median), database: ${database.description}`);
    const sha256 = await makeFile(file, MB);
    const size = (await stat(file)).size;

    await runMigrations(database.url);
    const handle = createDb(database.url);
    const storeDir = path.join(work, "store");
    const app = await buildApp({ database: handle, masterKey: Buffer.alloc(32, 3), outboundAllow: [], backupStore: createObjectStore({ kind: "local", dir: storeDir }) });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
    const raw = await rawServer(work);
    try {
      const d = await createDemoOrganization(handle.db, app.services);
      const backupId = randomUUID();
      const key = `backups/${d.organization_id}/${d.environments.running}/${backupId}`;
      await handle.pool.query(
        "insert into backups (id, organization_id, environment_id, deployment_id, storage, storage_key) values ($1, $2, $3, $4, 'local', $5)",
        [backupId, d.organization_id, d.environments.running, randomUUID(), key],
      );
      const links = createBackupLinks({ secret: await instanceSecret(handle.db, "cursor_secret"), clock: { now: () => new Date() } });
      const { token } = links.issueUpload({ id: backupId }, 3600_000);
      const sum = { name: "db.dump", size, sha256 };

      const upload: number[] = [];
      const put: number[] = [];
      const copy: number[] = [];
      const kinds = {
        upload: () => uploadFile({ base, path: `/agent/v1/backups/${backupId}/files`, token, file, sum, signal: AbortSignal.timeout(600_000), attempts: 1 }),
        put: () => rawPut(raw.port, file, size),
        copy: async () => {
          const to = path.join(work, "copy");
          await pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), createWriteStream(to, { highWaterMark: 1 << 20 }));
          await fsyncFile(to);
          await rm(to);
        },
      };
      const times = { upload, put, copy };
      const order = ["upload", "put", "copy"] as const;
      for (let run = 1; run <= RUNS; run++) {
        // Each in its turn first, and each on a disk with nothing left to write back (sync):
        // the writeback of what the one before wrote must not be charged to the next.
        for (let i = 0; i < order.length; i++) {
          const kind = order[(run - 1 + i) % order.length]!;
          execFileSync("sync");
          times[kind].push(await timed(kinds[kind]));
        }
        const speeds = [upload, put, copy].map((xs) => (size / 1e6 / (xs.at(-1)! / 1000)).toFixed(0));
        log(`  run ${run}: upload ${speeds[0]} MB/s, raw PUT ${speeds[1]} MB/s, disk copy ${speeds[2]} MB/s`);
      }
      // What arrived is the file.
      const storedSha = createHash("sha256");
      for await (const c of createReadStream(path.join(storeDir, ...key.split("/"), "db.dump"))) storedSha.update(c as Buffer);
      if (storedSha.digest("hex") !== sha256) throw new Error("the stored file differs from the uploaded one");

      const rate = (ms: number) => size / 1e6 / (ms / 1000);
      const uploadMbS = rate(median(upload));
      const putMbS = rate(median(put));
      const copyMbS = rate(median(copy));
      log(`upload into the backup store: ${uploadMbS.toFixed(0)} MB/s = ${(uploadMbS / putMbS).toFixed(2)} x a raw HTTP PUT (${putMbS.toFixed(0)} MB/s), disk copy ${copyMbS.toFixed(0)} MB/s`);
      log(`goal >= ${GOAL_MB_S} MB/s: ${uploadMbS >= GOAL_MB_S ? "met" : "NOT met"}`);
      log(
        JSON.stringify({
          file_mb: +(size / 1e6).toFixed(1),
          runs: RUNS,
          upload_mb_s: +uploadMbS.toFixed(1),
          raw_put_mb_s: +putMbS.toFixed(1),
          disk_copy_mb_s: +copyMbS.toFixed(1),
          upload_over_raw_put: +(uploadMbS / putMbS).toFixed(3),
          goal_mb_s: GOAL_MB_S,
          goal_met: uploadMbS >= GOAL_MB_S,
        }),
      );
    } finally {
      await raw.close();
      await app.close();
      await handle.close();
    }
  } finally {
    await database.stop();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
