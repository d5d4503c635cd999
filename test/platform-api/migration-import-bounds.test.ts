// import-url's bounds against a local HTTPS server this test starts (self-signed, trusted
// through migrationImport.ca; 127.0.0.1 allowed as in migration-import.test.ts), with the
// organisation's quota set to 8 MB (BERTH_MIGRATION_QUOTA_BYTES):
// - a body without Content-Length that never ends is cut off where the quota ends, at once
//   (not at the 600 s deadline), failing with upload_quota_exceeded and keeping nothing;
// - a Content-Length past the quota fails before the body is read;
// - an import as spec 4.3 shows it (cloud_url only, no checksum) is stored with the SHA-256
//   the server computed.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { fixedAnalysis } from "../support/fixed-analysis.ts";
import { waitUntil } from "../support/wait.ts";

const exec = promisify(execFile);
const QUOTA = 8 * 1024 * 1024;
const small = randomBytes(1024 * 1024 + 3);
let dir: string;
let server: https.Server;
let origin: string;
let cp: TestControlPlane;
let demo: DemoOrganization;
let owner: Person;
/** Bytes the endless answer has written, for the test to see it was stopped. */
let endlessSent = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-import-bounds-"));
  await exec("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-keyout", path.join(dir, "k.pem"), "-out", path.join(dir, "c.pem"), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]);
  const cert = await readFile(path.join(dir, "c.pem"));
  server = https.createServer({ key: await readFile(path.join(dir, "k.pem")), cert }, (req, res) => {
    if (req.url === "/endless.zip") {
      // Chunked (no Content-Length), and it never ends.
      res.writeHead(200, { "content-type": "application/zip" });
      const chunk = randomBytes(256 * 1024);
      const more = () => {
        if (res.destroyed) return;
        endlessSent += chunk.length;
        if (res.write(chunk)) setImmediate(more);
        else res.once("drain", more);
      };
      res.on("close", () => undefined);
      more();
      return;
    }
    if (req.url === "/announced-huge.zip") {
      res.writeHead(200, { "content-length": 50 * 1024 * 1024 * 1024 });
      res.write(randomBytes(1024));
      return;
    }
    if (req.url === "/small.zip") {
      res.writeHead(200, { "content-length": small.length });
      res.end(small);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  cp = await startControlPlane({
    migrationQuotaBytes: QUOTA,
    outboundAllow: ["127.0.0.1"],
    migrationImport: { ca: cert },
    jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
    analyzeBackup: fixedAnalysis({ erp_version: "16.0" }),
  });
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id });
}, 60_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await cp?.close();
  await rm(dir, { recursive: true, force: true });
});

async function newMigration(): Promise<string> {
  const res = await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "on_premise", project_name: "Imported", data_processing_consent: true });
  return res.body.id as string;
}
const recordOf = async (id: string) => (await owner.api.get(`/migrations/${id}`)).body;
const ended = (id: string) => waitUntil("the import to end", async () => ["analyzed", "failed"].includes((await recordOf(id)).status), { timeoutMs: 20_000, intervalMs: 100 });
/** What the import left: files in the upload folder and the backup store. */
async function leftOf(id: string): Promise<string[]> {
  const uploads = (await readdir(cp.app.services.migrations.tus.dir).catch(() => [] as string[])).filter((n) => n.includes(id));
  const stored = (await readdir(cp.backupDir, { recursive: true, withFileTypes: true })).filter((f) => f.isFile() && f.parentPath.includes(id)).map((f) => f.name);
  return [...uploads, ...stored];
}

it("a body without Content-Length that never ends is cut off at the quota at once: upload_quota_exceeded, nothing kept", async () => {
  const id = await newMigration();
  const started = Date.now();
  expect((await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/endless.zip` })).status).toBe(202);
  await ended(id);
  const record = await recordOf(id);
  expect(record.status).toBe("failed");
  expect(record.error_message).toMatch(/^Download failed \(upload_quota_exceeded\): the download, without a Content-Length, reached \d+ bytes, more than the 8388608 bytes the organisation's migration quota leaves; nothing was kept$/);
  expect(Date.now() - started).toBeLessThan(15_000);
  // The server was stopped near the bound (socket buffers aside), not read for 600 s.
  expect(endlessSent).toBeLessThan(QUOTA + 16 * 1024 * 1024);
  expect(await leftOf(id)).toEqual([]);
}, 30_000);

it("a Content-Length past the quota fails before the body is read; a declared file_size past it is refused with 413", async () => {
  const id = await newMigration();
  await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/announced-huge.zip` });
  await ended(id);
  expect((await recordOf(id)).error_message).toBe(
    `Download failed (upload_quota_exceeded): the server announces ${50 * 1024 ** 3} bytes, more than the ${QUOTA} bytes the organisation's migration quota leaves; nothing was kept`,
  );
  expect(await leftOf(id)).toEqual([]);
  const refused = await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/small.zip`, file_size: QUOTA + 1 });
  expect(refused).toMatchObject({ status: 413, body: { error: "upload_quota_exceeded" } });
}, 30_000);

it("an import as spec 4.3 shows it (cloud_url only): stored with the SHA-256 the server computed", async () => {
  const id = await newMigration();
  expect((await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/small.zip` })).status).toBe(202);
  await ended(id);
  expect(await recordOf(id)).toMatchObject({ status: "analyzed", sha256: createHash("sha256").update(small).digest("hex"), sha256_source: "computed", bytes_received: small.length });
}, 30_000);
