// import-url (platform spec 4.3) against a local HTTPS server this test starts (a
// self-signed certificate made with openssl, trusted through the app's migrationImport.ca;
// 127.0.0.1 on the operator's allow-list as other outbound tests do): a download cut half-way
// resumes with Range and passes the integrity check; a stalled one fails at the deadline
// (shortened to 4 s here: "Download timed out after 4s"); HTTP and metadata addresses are
// refused. The analysis is a fixed function (this file tests the download, not the analysis).
import { execFile } from "node:child_process";
import fs from "node:fs";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
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
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const data = randomBytes(3 * 1024 * 1024 + 5);

let dir: string;
let server: https.Server;
let origin: string;
let cp: TestControlPlane;
let demo: DemoOrganization;
let owner: Person;
const requests: { path: string; range: string | undefined }[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-import-"));
  await exec("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-keyout", path.join(dir, "k.pem"), "-out", path.join(dir, "c.pem"), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]);
  const cert = await readFile(path.join(dir, "c.pem"));
  server = https.createServer({ key: await readFile(path.join(dir, "k.pem")), cert }, (req, res) => {
    requests.push({ path: req.url ?? "", range: req.headers.range });
    if (req.url === "/backups/acme.zip") {
      const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
      if (m) {
        const start = Number(m[1]);
        res.writeHead(206, { "content-length": data.length - start, "content-range": `bytes ${start}-${data.length - 1}/${data.length}`, "accept-ranges": "bytes" });
        res.end(data.subarray(start));
        return;
      }
      // The first answer is cut half-way.
      res.writeHead(200, { "content-length": data.length, "accept-ranges": "bytes" });
      res.write(data.subarray(0, data.length >> 1), () => setTimeout(() => res.destroy(), 200));
      return;
    }
    if (req.url === "/backups/slow.zip") {
      res.writeHead(200, { "content-length": 10_000_000 });
      res.write(randomBytes(1000));
      return; // and nothing more
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  cp = await startControlPlane({
    outboundAllow: ["127.0.0.1"],
    migrationImport: { timeoutMs: 4000, ca: cert },
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
const statusOf = async (id: string) => (await owner.api.get(`/migrations/${id}`)).body;

it("a cut download resumes with Range, passes the integrity check and is analysed; progress events carry the bytes", async () => {
  const id = await newMigration();
  const res = await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/backups/acme.zip`, sha256: sha(data) });
  expect(res).toMatchObject({ status: 202, body: { status: "importing", migration_id: id } });
  await waitUntil("the import and analysis", async () => ["analyzed", "failed"].includes((await statusOf(id)).status), { timeoutMs: 20_000, intervalMs: 100 });
  expect(await statusOf(id)).toMatchObject({ status: "analyzed", sha256: sha(data), file_name: "acme.zip", upload_tier: "import", bytes_received: data.length });
  const mine = requests.filter((r) => r.path === "/backups/acme.zip");
  expect(mine[0]!.range).toBeUndefined();
  expect(mine[1]!.range).toMatch(/^bytes=\d+-$/);
  expect(Number(/\d+/.exec(mine[1]!.range!)![0])).toBeGreaterThan(0);
  const { rows } = await cp.database.pool.query<{ data: Record<string, unknown> }>("select data from org_events where type = 'migration_progress' and data->>'migration_id' = $1 order by id", [id]);
  expect(rows.some((r) => r.data.status === "importing" && r.data.current_step === "downloading")).toBe(true);
}, 30_000);

it("with a disk slower than the network, a cut download still resumes where the file ends and passes the integrity check", async () => {
  // Every file write of this process (the control plane's included) waits 300 ms, whichever
  // API makes it: when the connection is cut, part of what arrived has not reached the file yet.
  const probe = await open(path.join(dir, "probe"), "w");
  const handles = Object.getPrototypeOf(probe) as Record<string, unknown>;
  await probe.close();
  const slowed: [Record<string, unknown>, string, unknown][] = [];
  const slow = (owner: Record<string, unknown>, name: string, callback: boolean) => {
    const original = owner[name] as (...a: unknown[]) => unknown;
    slowed.push([owner, name, original]);
    owner[name] = function (this: unknown, ...a: unknown[]) {
      if (callback) return void setTimeout(() => original.apply(this, a), 300);
      return new Promise((r) => setTimeout(r, 300)).then(() => original.apply(this, a));
    };
  };
  slow(fs as unknown as Record<string, unknown>, "write", true);
  slow(fs as unknown as Record<string, unknown>, "writev", true);
  slow(handles, "write", false);
  slow(handles, "writev", false);
  try {
    const id = await newMigration();
    await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/backups/acme.zip`, sha256: sha(data) });
    await waitUntil("the import and analysis", async () => ["analyzed", "failed"].includes((await statusOf(id)).status), { timeoutMs: 20_000, intervalMs: 100 });
    expect(await statusOf(id)).toMatchObject({ status: "analyzed", sha256: sha(data), bytes_received: data.length });
  } finally {
    for (const [owner, name, original] of slowed) owner[name] = original;
  }
}, 30_000);

it("a download still running at the deadline fails with \"Download timed out after 4s\"", async () => {
  const id = await newMigration();
  await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/backups/slow.zip` });
  await waitUntil("the deadline", async () => (await statusOf(id)).status === "failed", { timeoutMs: 15_000, intervalMs: 200 });
  expect((await statusOf(id)).error_message).toBe("Download timed out after 4s");
}, 30_000);

it("plain HTTP is refused; a metadata address fails without any connection", async () => {
  const id = await newMigration();
  expect((await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: "http://127.0.0.1/x.zip" })).body.error).toBe("invalid_import_url");
  await owner.api.post(`/migrations/${id}/import-url`, { cloud_url: "https://169.254.169.254/latest/backup.zip" });
  await waitUntil("the refusal", async () => (await statusOf(id)).status === "failed", { timeoutMs: 10_000, intervalMs: 100 });
  expect((await statusOf(id)).error_message).toMatch(/^Download failed: refused: the target's address is not allowed/);
}, 30_000);
