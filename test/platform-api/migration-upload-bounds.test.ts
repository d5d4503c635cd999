// Uploads as platform spec 4.3 shows them, and the bounds of uploads and of the analysis, over
// real HTTP against a control plane on a real PostgreSQL with the real streaming analysis:
// - spec 4.3's upload (init with file_name and file_size, then upload/direct with the field
//   file, no checksum anywhere) reaches an analysed migration whose SHA-256 the server computed;
// - a 25 MB zip of 300,000 `../x` members is analysed into a record of a few hundred bytes
//   whose warning says how many were ignored (it made an 18 MB record, one warning each);
// - an organisation's quota (BERTH_MIGRATION_QUOTA_BYTES, 8 MB here) refuses upload/init and a
//   tus creation past it with 413 upload_quota_exceeded;
// - tus parts are bounded in number (100 per upload) and together by the declared size.
import { createHash, randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { waitUntil } from "../support/wait.ts";
import { erpDump, zipBytes } from "../fuzz/archives.ts";
import { rawRequest as raw } from "../support/http.ts";

const QUOTA = 40 * 1024 * 1024;
let cp: TestControlPlane;
let base: string;
let demo: DemoOrganization;
let owner: Person;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, migrationQuotaBytes: QUOTA, jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 }, migrationTiers: { tier_1: 30 * 1024 * 1024, tier_2: 500 * 1024 * 1024, tier_3: 5 * 1024 ** 3 } });
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}/api/v1`;
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id, projectId: demo.project_id });
}, 60_000);

afterAll(async () => {
  await cp?.close();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

const createMigration = () => createMigrationOf(owner, demo.organization_id);
async function createMigrationOf(by: Person, organizationId: string): Promise<string> {
  const res = await by.api.post("/migrations", { organization_id: organizationId, source_type: "vendor_paas", project_name: "Acme", data_processing_consent: true });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

/** Spec 4.3 to the letter: init with file_name and file_size, then the multipart field file; no checksum. */
async function specUpload(id: string, bytes: Buffer, fileName = "acme.zip") {
  const init = await fetch(`${base}/migrations/${id}/upload/init?file_name=${fileName}&file_size=${bytes.length}`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` } });
  const initBody = (await init.json()) as Record<string, string>;
  if (init.status !== 200) return { status: init.status, body: initBody };
  expect(initBody).toMatchObject({ migration_id: id, upload_tier: "tier_1", method: "POST", upload_url: expect.stringMatching(/\/upload\/direct$/) });
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(bytes)]), fileName);
  const up = await fetch(`${base}/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form });
  return { status: up.status, body: (await up.json()) as Record<string, unknown> };
}

async function settled(id: string) {
  await waitUntil("the analysis", async () => ["analyzed", "failed"].includes((await owner.api.get(`/migrations/${id}`)).body.status), { timeoutMs: 60_000, intervalMs: 200 });
  return (await owner.api.get(`/migrations/${id}`)).body as Record<string, unknown>;
}

describe("uploads as platform spec 4.3 shows them", () => {
  it("upload/init (file_name, file_size) then upload/direct (field file), no checksum: verified by size, SHA-256 computed, analysed", async () => {
    const id = await createMigration();
    const backup = zipBytes([{ name: "dump.sql", data: erpDump(), method: 8 }]);
    const up = await specUpload(id, backup);
    expect(up).toMatchObject({ status: 200, body: { migration_id: id, size_bytes: backup.length, sha256: sha(backup) } });
    const record = await settled(id);
    expect(record).toMatchObject({ status: "analyzed", erp_version_detected: "17.0", sha256: sha(backup), sha256_source: "computed" });
    const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
    expect(analysis).toMatchObject({ migration_id: id, erp_version: "17.0", format: "zip", sha256: sha(backup), sha256_source: "computed" });
  }, 60_000);

  it("a declared checksum is still verified: a wrong one is refused (422) and nothing is kept; a right one shows as declared", async () => {
    const backup = zipBytes([{ name: "dump.sql", data: erpDump() }]);
    const wrong = await createMigration();
    await owner.api.post(`/migrations/${wrong}/upload/init?file_name=a.zip&file_size=${backup.length}&sha256=${"0".repeat(64)}`);
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(backup)]), "a.zip");
    const res = await fetch(`${base}/migrations/${wrong}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { error: string }).error).toBe("upload_checksum_mismatch");
    const files = await readdir(cp.backupDir, { recursive: true, withFileTypes: true });
    expect(files.filter((f) => f.isFile() && f.parentPath.includes(wrong))).toEqual([]);

    const right = await createMigration();
    await owner.api.post(`/migrations/${right}/upload/init?file_name=a.zip&file_size=${backup.length}&sha256=${sha(backup)}`);
    const ok = await fetch(`${base}/migrations/${right}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form });
    expect(ok.status).toBe(200);
    expect(await settled(right)).toMatchObject({ status: "analyzed", sha256_source: "declared" });
  }, 60_000);
});

describe("a bounded analysis", () => {
  it("a zip of 300,000 `../x` members: one warning with the count, a record of a few hundred bytes", async () => {
    const id = await createMigration();
    const backup = zipBytes([{ name: "dump.sql", data: erpDump() }, ...Array.from({ length: 300_000 }, () => ({ name: "../x", data: Buffer.alloc(0) }))]);
    expect(backup.length).toBeGreaterThan(20 * 1024 * 1024);
    expect((await specUpload(id, backup)).status).toBe(200);
    expect(await settled(id)).toMatchObject({ status: "analyzed" });
    const analysis = await owner.api.get(`/migrations/${id}/analysis`);
    expect(analysis.body.warnings).toEqual(['300000 members with unsafe names were ignored, e.g. "../x"']);
    expect(analysis.body.warnings_omitted).toBe(0);
    const { rows } = await cp.database.pool.query<{ bytes: number }>("select octet_length(analysis::text) as bytes from migrations where id = $1", [id]);
    expect(rows[0]!.bytes).toBeLessThan(4096);
    expect(JSON.stringify(analysis.body).length).toBeLessThan(4096);
  }, 120_000);

  it("a dump of 200,000 installed modules and one with a 100 kB name: 5,000 listed, the rest counted and said", async () => {
    const id = await createMigration();
    const rows = Array.from({ length: 200_000 }, (_, i) => `${i + 10}\tmod_${i}\tinstalled\t17.0.1.0\tLGPL-3`);
    rows.push(`9\t${"x".repeat(100_000)}\tinstalled\t17.0.1.0\tLGPL-3`);
    const extra = ["COPY public.ir_module_module (id, name, state, latest_version, license) FROM stdin;", ...rows, "\\.", ""].join("\n");
    expect((await specUpload(id, zipBytes([{ name: "dump.sql", data: erpDump(extra), method: 8 }]))).status).toBe(200);
    expect(await settled(id)).toMatchObject({ status: "analyzed" });
    const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
    expect(analysis.total_modules).toBe(200_003);
    expect(analysis.standard_modules.length + analysis.custom_modules.length).toBe(5_000);
    expect(analysis.warnings).toContain("195003 more installed modules (beyond 5000, or with names over 256 bytes) are not listed");
    const { rows: stored } = await cp.database.pool.query<{ bytes: number }>("select octet_length(analysis::text) as bytes from migrations where id = $1", [id]);
    expect(stored[0]!.bytes).toBeLessThan(100_000);
  }, 120_000);
});


describe("upload bounds", () => {
  const tus = () => ({ authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" });

  it("the organisation's quota: upload/init and a tus creation past it answer 413 upload_quota_exceeded with the figures", async () => {
    // An organisation of its own: the other tests' stored backups count in theirs.
    const org = await createDemoOrganization(cp.database.db, cp.app.services);
    const owner = await addPerson(cp.app, "org_owner", { organizationId: org.organization_id });
    const tus = () => ({ authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" });
    const createMigration = () => createMigrationOf(owner, org.organization_id);
    const big = await createMigration();
    // 35 MB declared (tus, tier_2 from 30 MB here) of the 40 MB quota: under way, it counts.
    const init = await owner.api.post(`/migrations/${big}/upload/init?file_name=big.zip&file_size=${35 * 1024 * 1024}`);
    expect(init.body.upload_tier).toBe("tier_2");
    const other = await createMigration();
    const refused = await owner.api.post(`/migrations/${other}/upload/init?file_name=b.zip&file_size=${6 * 1024 * 1024}`);
    expect(refused.status).toBe(413);
    expect(refused.body).toMatchObject({ error: "upload_quota_exceeded", message: expect.stringContaining(`over its quota of ${QUOTA} bytes`) });
    expect(refused.body.message).toContain(`${35 * 1024 * 1024} stored or being uploaded`);
    expect((await owner.api.get(`/migrations/${other}`)).body.status).toBe("pending");
    // A small one fits; then the big one's tus creation finds the quota taken meanwhile: the
    // other migration is made an import that declared no size and has received 6 MB so far.
    expect((await owner.api.post(`/migrations/${other}/upload/init?file_name=b.zip&file_size=${4 * 1024 * 1024}`)).status).toBe(200);
    await cp.app.services.migrations.repo.update(other, { status: "importing", uploadTier: "import", declaredSizeBytes: null, receivedBytes: 6 * 1024 * 1024 });
    const created = await raw("POST", `${base}/migrations/${big}/upload/tus`, { ...tus(), "upload-length": 35 * 1024 * 1024 });
    expect(created.status).toBe(413);
    expect(JSON.parse(created.body)).toMatchObject({ error: "upload_quota_exceeded" });
    // Cancelling the other one frees its share once its bytes are gone.
    await owner.api.post(`/migrations/${other}/cancel`);
    expect((await raw("POST", `${base}/migrations/${big}/upload/tus`, { ...tus(), "upload-length": 35 * 1024 * 1024 })).status).toBe(201);
    await owner.api.post(`/migrations/${big}/cancel`);
  }, 60_000);

  it("tus parts: at most 100 per upload, and together no more than the declared size", async () => {
    const id = await createMigration();
    const size = 2 * 1024 * 1024;
    await owner.api.post(`/migrations/${id}/upload/init?file_name=p.zip&file_size=${size}`);
    // 2 MB is tier_1 by size: the record is given a resumable tier to keep the test small (as migrations.test.ts does).
    await cp.app.services.migrations.repo.update(id, { uploadTier: "tier_2" });
    const url = `${base}/migrations/${id}/upload/tus`;
    const part = (length: number) => raw("POST", url, { ...tus(), "upload-concat": "partial", "upload-length": length });
    // Parts of 1 MB and 1 MB fill the declared 2 MB; one byte more is refused.
    expect((await part(1024 * 1024)).status).toBe(201);
    expect((await part(1024 * 1024 - 100)).status).toBe(201);
    const over = await part(101);
    expect(over.status).toBe(413);
    expect(JSON.parse(over.body)).toMatchObject({ error: "upload_parts_too_large", message: expect.stringContaining(`more than the ${size} declared`) });
    // Up to 100 parts (here 2 + 98 of one byte), then too_many_upload_parts, however they are sent.
    const results = await Promise.all(Array.from({ length: 110 }, () => part(1)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(98);
    expect(statuses.filter((s) => s !== 201).every((s) => s === 409 || s === 413)).toBe(true);
    const refusal = JSON.parse(results.find((r) => r.status === 409)!.body);
    expect(refusal).toMatchObject({ error: "too_many_upload_parts", message: expect.stringContaining("(100)") });
    const files = (await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(`${id}.p`) && !n.endsWith(".json"));
    expect(files).toHaveLength(100);
    // A final listing more than 100 parts is refused before anything is read.
    const fake = Array.from({ length: 101 }, () => `${url}/${id}.p${randomBytes(16).toString("hex")}`).join(" ");
    const final = await raw("POST", url, { ...tus(), "upload-concat": `final;${fake}` });
    expect([final.status, JSON.parse(final.body).error]).toEqual([409, "too_many_upload_parts"]);
    await owner.api.post(`/migrations/${id}/cancel`);
  }, 60_000);
});
