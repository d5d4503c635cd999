// import-url without a declared file_size, twice at once, against the organisation's quota
// (10,000 bytes here), on two replicas sharing a real PostgreSQL and a local HTTPS server this
// test starts (self-signed, trusted through migrationImport.ca). Each download's bound was
// what the quota left when it began: two that began together each found the whole room, and
// both were stored (12,000 bytes). Now the bytes received are reserved before they are
// stored (url-import.ts): one import is stored, the other fails with "Download failed
// (upload_quota_exceeded): …" and keeps nothing.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, createObjectStore, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { fixedAnalysis } from "../support/fixed-analysis.ts";
import { waitUntil } from "../support/wait.ts";

const exec = promisify(execFile);
const QUOTA = 10_000;
const body = randomBytes(6_000);
let dir: string;
let server: https.Server;
let origin: string;
const replicas: TestControlPlane[] = [];
let demo: DemoOrganization;
let owner: Person;
/** Answers held until both downloads have asked (or 10 s passed): both begin before either ends. */
const waiting: (() => void)[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-import-race-"));
  await exec("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-keyout", path.join(dir, "k.pem"), "-out", path.join(dir, "c.pem"), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]);
  const cert = await readFile(path.join(dir, "c.pem"));
  server = https.createServer({ key: await readFile(path.join(dir, "k.pem")), cert }, (req, res) => {
    const answer = () => res.writeHead(200, { "content-length": body.length }).end(body);
    waiting.push(answer);
    if (waiting.length === 2) for (const a of waiting.splice(0)) a();
    else setTimeout(() => waiting.includes(answer) && waiting.splice(waiting.indexOf(answer), 1) && answer(), 10_000);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  origin = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
  const options = {
    migrationQuotaBytes: QUOTA,
    outboundAllow: ["127.0.0.1"],
    migrationImport: { ca: cert },
    jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
    analyzeBackup: fixedAnalysis({ erp_version: "16.0" }),
    backupStore: createObjectStore({ kind: "local", dir: path.join(dir, "store") }),
  };
  replicas.push(await startControlPlane(options));
  replicas.push(await startControlPlane({ ...options, url: replicas[0]!.url }));
  demo = await createDemoOrganization(replicas[0]!.database.db, replicas[0]!.app.services);
  owner = await addPerson(replicas[0]!.app, "org_owner", { organizationId: demo.organization_id });
}, 60_000);

afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  for (const r of replicas.reverse()) await r.close();
  await rm(dir, { recursive: true, force: true });
});

it("two imports of 6,000 bytes at once, no file_size, against 10,000: one stored, the other fails with upload_quota_exceeded", async () => {
  const ids: string[] = [];
  for (let i = 0; i < 2; i++) {
    const res = await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "on_premise", project_name: `Imported ${i}`, data_processing_consent: true });
    ids.push(res.body.id as string);
  }
  const started = await Promise.all(ids.map((id, i) => owner.api.post(`/migrations/${id}/import-url`, { cloud_url: `${origin}/backup-${i}.zip` })));
  expect(started.map((r) => r.status)).toEqual([202, 202]);
  const records = async () => Promise.all(ids.map(async (id) => (await owner.api.get(`/migrations/${id}`)).body as { status: string; error_message: string | null }));
  await waitUntil("both imports to end", async () => (await records()).every((r) => ["analyzed", "failed"].includes(r.status)), { timeoutMs: 60_000, intervalMs: 200 });

  const ended = await records();
  expect(ended.map((r) => r.status).sort()).toEqual(["analyzed", "failed"]);
  expect(ended.find((r) => r.status === "failed")!.error_message).toMatch(/^Download failed \(upload_quota_exceeded\): .*over its quota of 10000 bytes/);
  const { rows } = await replicas[0]!.database.pool.query<{ stored: string }>(
    "select coalesce(sum(stored_size_bytes), 0)::text as stored from migrations where organization_id = $1 and storage_key is not null",
    [demo.organization_id],
  );
  expect(Number(rows[0]!.stored)).toBe(6_000);
}, 120_000);
