// `npm run bench:migrations-upload`: how fast a tier-2 migration backup travels into the
// backup store on loopback through the real route: upload/init, the tus creation POST, PATCHes
// of 10 MiB chunks (session check, tus file store), and the last PATCH's finish (the file
// streamed into the local store while its SHA-256 is computed, fsync, rename, the integrity
// check, the analysis queued). Against a plain baseline in the same run on the same file:
//   raw PUT  a bare node:http server writing the request body to a file and fsyncing it.
// Runs alternate their order and each starts after `sync`. Goal: the upload >= 150 MB/s.
// The last line is one JSON object, units in its keys.
//
// Environment: BENCH_MIGRATION_UPLOAD_MB (400, within tier 2), BENCH_MIGRATION_UPLOAD_RUNS (3;
// the median is reported), DATABASE_URL (else an embedded PostgreSQL).
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdtemp, rm, stat } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { createDb, runMigrations } from "@berth/db";
import { buildApp, createDemoOrganization, createObjectStore } from "@berth/control-plane";
import { startBenchDatabase } from "./database.ts";
import { fixedAnalysis } from "../support/fixed-analysis.ts";
import { median } from "./median.ts";
import { setting } from "./settings.ts";
import { makeFile, rawPut, rawServer } from "./upload-baseline.ts";

const MB = Math.round(setting("BENCH_MIGRATION_UPLOAD_MB", 400, 51));
const RUNS = Math.round(setting("BENCH_MIGRATION_UPLOAD_RUNS", 3, 1));
const GOAL_MB_S = 150;
const log = (line = "") => process.stdout.write(`${line}\n`);
/** One request with a body streamed from part of a file; the answer's status and headers. */
function send(url: string, method: string, headers: Record<string, string | number>, body?: { file: string; start: number; end: number }): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, ...(body ? { "content-length": body.end - body.start + 1 } : {}) } }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString() }));
    });
    req.on("error", reject);
    if (body) pipeline(createReadStream(body.file, { start: body.start, end: body.end, highWaterMark: 1 << 20 }), req).catch(reject);
    else req.end();
  });
}

async function main(): Promise<void> {
  const work = await mkdtemp(path.join(os.tmpdir(), "berth-bench-migration-upload-"));
  const database = await startBenchDatabase();
  try {
    const file = path.join(work, "backup.zip");
    log(`bench:migrations-upload: ${MB} MiB file (tier 2, tus, 10 MiB chunks), ${RUNS} runs each (median), database: ${database.description}`);
    const sha256 = await makeFile(file, MB);
    const size = (await stat(file)).size;

    await runMigrations(database.url);
    const handle = createDb(database.url);
    const storeDir = path.join(work, "store");
    const app = await buildApp({
      database: handle,
      masterKey: Buffer.alloc(32, 3),
      outboundAllow: [],
      backupStore: createObjectStore({ kind: "local", dir: storeDir }),
      migrationUploadDir: path.join(work, "tus"),
      // The bench measures the upload; the analysis is a fixed answer.
      analyzeBackup: fixedAnalysis({ database_name: "bench", database_size_bytes: 0, total_size_bytes: 0, total_modules: 0, standard_modules: [], partner_count: 0, user_count: 0, estimated_monthly_cost: 0, vendor_equivalent_cost: 0, monthly_savings: 0 }),
    });
    await app.listen({ port: 0, host: "127.0.0.1" });
    const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/v1`;
    const raw = await rawServer(work);
    try {
      const d = await createDemoOrganization(handle.db, app.services);
      const email = `bench-${randomUUID().slice(0, 8)}@example.test`;
      const user = await app.services.sessions.createUser({ email, name: "bench", password: "correct horse battery staple" });
      await app.services.memberships.addToOrganization(d.organization_id, user.id, "owner");
      const res = await app.inject({ method: "POST", url: "/api/v1/auth/login", payload: { email, password: "correct horse battery staple" } });
      const token = (JSON.parse(res.body) as { token: string }).token;
      const auth = { authorization: `Bearer ${token}` };
      const tus = { ...auth, "tus-resumable": "1.0.0" };

      const uploadOnce = async () => {
        const created = await app.inject({ method: "POST", url: "/api/v1/migrations", headers: auth, payload: { organization_id: d.organization_id, source_type: "on_premise", project_name: "Bench", data_processing_consent: true } });
        const id = (JSON.parse(created.body) as { id: string }).id;
        const init = await send(`${base}/migrations/${id}/upload/init?file_name=backup.zip&file_size=${size}&sha256=${sha256}`, "POST", auth);
        const { upload_url: uploadUrl, chunk_size_bytes: chunk } = JSON.parse(init.text) as { upload_url: string; chunk_size_bytes: number };
        const post = await send(uploadUrl, "POST", { ...tus, "upload-length": size });
        if (post.status !== 201) throw new Error(`tus creation answered ${post.status}: ${post.text}`);
        const location = String(post.headers.location);
        let last = post;
        for (let offset = 0; offset < size; offset += chunk) {
          const end = Math.min(size, offset + chunk) - 1;
          last = await send(location, "PATCH", { ...tus, "content-type": "application/offset+octet-stream", "upload-offset": offset }, { file, start: offset, end });
          if (last.status !== 204) throw new Error(`PATCH at ${offset} answered ${last.status}: ${last.text}`);
        }
        if (last.headers["x-checksum-sha256"] !== sha256) throw new Error("the stored backup's digest differs from the file's");
        return id;
      };

      const upload: number[] = [];
      const put: number[] = [];
      const ids: string[] = [];
      for (let run = 1; run <= RUNS; run++) {
        const order = run % 2 ? (["upload", "put"] as const) : (["put", "upload"] as const);
        for (const kind of order) {
          execFileSync("sync");
          const t0 = performance.now();
          if (kind === "upload") ids.push(await uploadOnce());
          else await rawPut(raw.port, file, size);
          (kind === "upload" ? upload : put).push(performance.now() - t0);
        }
        // Each stored backup goes before the next run: the disk holds one at a time.
        for (const id of ids.splice(0)) await app.inject({ method: "DELETE", url: `/api/v1/migrations/${id}`, headers: auth });
        const speed = (xs: number[]) => (size / 1e6 / (xs.at(-1)! / 1000)).toFixed(0);
        log(`  run ${run}: tier-2 upload ${speed(upload)} MB/s, raw PUT ${speed(put)} MB/s`);
      }
      const rate = (ms: number) => size / 1e6 / (ms / 1000);
      const uploadMbS = rate(median(upload));
      const putMbS = rate(median(put));
      log("");
      log("| what                                    | MB/s  |");
      log("|-----------------------------------------|-------|");
      log(`| tier-2 upload (tus, 10 MiB, into store) | ${uploadMbS.toFixed(0).padStart(5)} |`);
      log(`| raw HTTP PUT to a file (baseline)       | ${putMbS.toFixed(0).padStart(5)} |`);
      log(`goal >= ${GOAL_MB_S} MB/s: ${uploadMbS >= GOAL_MB_S ? "met" : "NOT met"} (${(uploadMbS / putMbS).toFixed(2)} x the raw PUT)`);
      log(
        JSON.stringify({
          file_mb: +(size / 1e6).toFixed(1),
          runs: RUNS,
          chunk_mib: 10,
          upload_mb_s: +uploadMbS.toFixed(1),
          raw_put_mb_s: +putMbS.toFixed(1),
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
