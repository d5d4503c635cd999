// Tiers 3 and 4 on an S3 backup store (s3rver, a fake S3 started here on 127.0.0.1): upload/init
// answers s3_multipart, the parts go in parallel straight to the bucket through presigned
// URLs, complete assembles them, and the integrity check reads the object back. The tier
// thresholds are lowered for this file (1, 5 and 20 MB) so that real files of 18 and 40 MB
// are tier 3 and tier 4 and travel as real 16 MiB parts. The analysis is a fixed function.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import S3rver from "s3rver";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, createObjectStore, type DemoOrganization, type ObjectStore } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { fixedAnalysis } from "../support/fixed-analysis.ts";
import { waitUntil } from "../support/wait.ts";

const MB = 1024 * 1024;
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
let dir: string;
let s3: S3rver;
let store: ObjectStore;
let cp: TestControlPlane;
let demo: DemoOrganization;
let owner: Person;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "berth-parts-"));
  s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: dir, configureBuckets: [{ name: "berth-backups" }] });
  const { port } = await s3.run();
  store = createObjectStore({ kind: "s3", bucket: "berth-backups", endpoint: `http://127.0.0.1:${port}`, region: "us-east-1", accessKeyId: "S3RVER", secretAccessKey: "S3RVER", prefix: "t/" });
  cp = await startControlPlane({
    backupStore: store,
    migrationTiers: { tier_1: 1 * MB, tier_2: 5 * MB, tier_3: 20 * MB },
    jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
    analyzeBackup: fixedAnalysis({ erp_version: "18.0", postgres_version: "16.0", database_name: "big" }),
  });
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id });
}, 60_000);

afterAll(async () => {
  await cp?.close();
  await s3?.close();
  await rm(dir, { recursive: true, force: true });
});

async function partsUpload(data: Buffer, declaredSha: string, tier: string) {
  const id = (await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "other_paas", project_name: "Big", data_processing_consent: true })).body.id as string;
  const init = await owner.api.post(`/migrations/${id}/upload/init?file_name=big.zip&file_size=${data.length}&sha256=${declaredSha}`);
  expect(init.body).toMatchObject({ upload_tier: tier, protocol: "s3_multipart", part_size_bytes: 16 * MB });
  const { part_size_bytes: partSize, part_count: count } = init.body as { part_size_bytes: number; part_count: number };
  expect(count).toBe(Math.ceil(data.length / partSize));
  const urls = await owner.api.post(`/migrations/${id}/upload/parts`, { part_numbers: Array.from({ length: count }, (_, i) => i + 1) });
  expect(urls.status).toBe(200);
  // Every part at once, straight to the bucket.
  const parts = await Promise.all(
    (urls.body.parts as { part_number: number; url: string }[]).map(async (p) => {
      const body = data.subarray((p.part_number - 1) * partSize, Math.min(data.length, p.part_number * partSize));
      const res = await fetch(p.url, { method: "PUT", body: new Uint8Array(body) });
      expect(res.status).toBe(200);
      return { part_number: p.part_number, etag: res.headers.get("etag")! };
    }),
  );
  return { id, parts, complete: () => owner.api.post(`/migrations/${id}/upload/complete`, { parts }) };
}

it("tier 3: parallel parts through presigned URLs, assembled, verified and analysed", async () => {
  const data = randomBytes(18 * MB + 3);
  const up = await partsUpload(data, sha(data), "tier_3");
  expect(up.parts).toHaveLength(2);
  const done = await up.complete();
  expect(done).toMatchObject({ status: 200, body: { size_bytes: data.length, sha256: sha(data) } });
  await waitUntil("the analysis", async () => (await owner.api.get(`/migrations/${up.id}`)).body.status === "analyzed", { timeoutMs: 15_000, intervalMs: 100 });
  expect((await store.head(`migrations/${demo.organization_id}/${up.id}/backup`))?.size_bytes).toBe(data.length);
  // DELETE removes the object from the bucket.
  expect((await owner.api.delete(`/migrations/${up.id}`)).body.storage_deleted).toBe(true);
  expect(await store.head(`migrations/${demo.organization_id}/${up.id}/backup`)).toBeNull();
}, 60_000);

it("tier 4: three parallel parts complete; a completion that leaves a part out is caught by the integrity check", async () => {
  const data = randomBytes(40 * MB);
  const up = await partsUpload(data, sha(data), "tier_4");
  expect(up.parts).toHaveLength(3);
  expect((await up.complete())).toMatchObject({ status: 200, body: { size_bytes: data.length, sha256: sha(data) } });
  // (s3rver assembles whatever parts it is given; a real bucket would also refuse a wrong ETag with 409 upload_incomplete.)
  const partial = await partsUpload(data, sha(data), "tier_4");
  const short = await owner.api.post(`/migrations/${partial.id}/upload/complete`, { parts: partial.parts.slice(0, 2) });
  expect(short).toMatchObject({ status: 422, body: { error: "upload_checksum_mismatch" } });
  expect((await owner.api.get(`/migrations/${partial.id}`)).body.error_message).toMatch(new RegExp(`^Integrity check failed: received ${32 * MB} bytes`));
}, 60_000);

it("a digest mismatch at complete fails the migration and leaves nothing in the bucket", async () => {
  const data = randomBytes(18 * MB);
  const up = await partsUpload(data, "b".repeat(64), "tier_3");
  const done = await up.complete();
  expect(done).toMatchObject({ status: 422, body: { error: "upload_checksum_mismatch" } });
  expect((await owner.api.get(`/migrations/${up.id}`)).body).toMatchObject({ status: "failed", error_message: expect.stringMatching(/^Integrity check failed/) });
  expect(await store.head(`migrations/${demo.organization_id}/${up.id}/backup`)).toBeNull();
}, 60_000);
