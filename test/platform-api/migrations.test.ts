// Migrations API (platform spec 4.3) over real HTTP against a control plane on a real
// PostgreSQL: create/list/get with permissions per role, the upload tiers into the backup
// store (tier 1 multipart, tier 2 tus with a cut connection resumed, a 20 GB declaration
// with 1 MB sent), the integrity check, configure/available-vms/start/cancel/retry/DELETE,
// and the cleanup job.
//
// The analysis is injected here as a function returning a fixed result: these tests are of
// the upload flow and the state machine around the analysis, not of the analysis itself (its
// HTTP test with real backups is test/platform-api/migration-analysis.test.ts).
import { createHash, randomBytes } from "node:crypto";
import http from "node:http";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, createObjectStore, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { ACME_ANALYSIS } from "../support/fixed-analysis.ts";
import { addPerson, type Person } from "../support/people.ts";
import { waitUntil } from "../support/wait.ts";

const waitFor = (check: () => Promise<boolean>, what: string, timeoutMs: number) => waitUntil(what, check, { timeoutMs, intervalMs: 100 });

let cp: TestControlPlane;
let base: string;
let demo: DemoOrganization;
let owner: Person;
let admin: Person;
let member: Person;
let outsider: Person;
const analysed: number[] = [];

beforeAll(async () => {
  cp = await startControlPlane({
    listen: true,
    jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
    analyzeBackup: async (source) => {
      // Reads the stored backup's first bytes, as the real analysis does, to prove the source opens.
      const head = await source.open({ start: 0, end: Math.min(15, source.size - 1) });
      for await (const _ of head) void _;
      analysed.push(source.size);
      return ACME_ANALYSIS;
    },
  });
  const addr = cp.app.server.address() as { port: number };
  base = `http://127.0.0.1:${addr.port}/api/v1`;
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  const where = { organizationId: demo.organization_id, projectId: demo.project_id };
  [owner, admin, member, outsider] = await Promise.all([addPerson(cp.app, "org_owner", where), addPerson(cp.app, "org_admin", where), addPerson(cp.app, "org_member", where), addPerson(cp.app, "outsider", where)]);
}, 60_000);

afterAll(async () => {
  await cp?.close();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

async function createMigration(p: Person = owner, name = "Acme ERP") {
  const res = await p.api.post("/migrations", { organization_id: demo.organization_id, source_type: "vendor_paas", project_name: name, data_processing_consent: true });
  expect(res.status).toBe(201);
  return res.body as { id: string; status: string };
}

async function storedFiles(): Promise<string[]> {
  return (await readdir(cp.backupDir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);
}

/** A raw HTTP request on the listening server; body written in pieces, optionally cut after `cutAfter` bytes. */
function raw(method: string, url: string, headers: Record<string, string | number>, body?: Buffer, cutAfter?: number): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string } | "cut"> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (c: Buffer) => parts.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString() }));
    });
    req.on("error", (err) => (cutAfter !== undefined ? resolve("cut") : reject(err)));
    if (body && cutAfter !== undefined) {
      req.write(body.subarray(0, cutAfter), () => setTimeout(() => req.destroy(), 300));
      return;
    }
    req.end(body);
  });
}

/** upload_url answered through app.inject names its Host; the same path on the listening server. */
const onServer = (url: string) => `${base}${new URL(url).pathname.replace(/^\/api\/v1/, "")}`;

async function directUpload(id: string, data: Buffer, declaredSha: string, token = owner.token) {
  const form = new FormData();
  form.append("sha256", declaredSha);
  form.append("file", new Blob([new Uint8Array(data)]), "backup.zip");
  const res = await fetch(`${base}/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body: form });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("records and permissions", () => {
  it("create needs data_processing_consent true; list pages and filters; get", async () => {
    const refused = await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "on_premise", project_name: "X", data_processing_consent: false });
    expect(refused).toMatchObject({ status: 400, body: { error: "consent_required" } });
    const a = await createMigration(owner, "List A");
    await createMigration(admin, "List B");
    expect(a).toMatchObject({ status: "pending", progress_percent: 0, project_name: "List A", organization_id: demo.organization_id });
    const page = await member.api.get(`/migrations?organization_id=${demo.organization_id}&page=1&page_size=1&status=pending`);
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expect(page.body.total).toBeGreaterThanOrEqual(2);
    expect(page.body.pages).toBe(page.body.total);
    expect((await member.api.get(`/migrations?organization_id=${demo.organization_id}&page_size=101`)).status).toBe(400);
    expect((await member.api.get(`/migrations/${a.id}`)).body).toMatchObject({ id: a.id, status: "pending" });
  });

  it("members list and read; only owners and admins create, upload, configure, start, delete; outsiders see nothing (404)", async () => {
    const m = await createMigration();
    expect((await member.api.post("/migrations", { organization_id: demo.organization_id, source_type: "vendor_paas", project_name: "N", data_processing_consent: true })).status).toBe(403);
    expect((await member.api.post(`/migrations/${m.id}/upload/init?file_name=a.zip&file_size=10`)).status).toBe(403);
    expect((await member.api.post(`/migrations/${m.id}/start`)).status).toBe(403);
    expect((await member.api.delete(`/migrations/${m.id}`)).status).toBe(403);
    expect((await member.api.post(`/migrations/${m.id}/cancel`)).status).toBe(403);
    expect((await outsider.api.get(`/migrations/${m.id}`))).toMatchObject({ status: 404, body: { message: "Migration not found" } });
    expect((await outsider.api.get(`/migrations?organization_id=${demo.organization_id}`)).status).toBe(404);
    expect((await outsider.api.post("/migrations", { organization_id: demo.organization_id, source_type: "vendor_paas", project_name: "N", data_processing_consent: true })).status).toBe(404);
    expect((await admin.api.post(`/migrations/${m.id}/upload/init?file_name=a.zip&file_size=10`)).status).toBe(200);
  });
});

describe("upload tiers", () => {
  it("upload/init answers the tier by size", async () => {
    const m = await createMigration();
    const tierOf = async (size: number) => (await owner.api.post(`/migrations/${m.id}/upload/init?file_name=b.zip&file_size=${size}`)).body;
    expect(await tierOf(1000)).toMatchObject({ upload_tier: "tier_1", method: "POST", protocol: "multipart", upload_url: expect.stringMatching(/\/upload\/direct$/) });
    expect(await tierOf(60 * 1024 * 1024)).toMatchObject({ upload_tier: "tier_2", protocol: "tus", chunk_size_bytes: 10 * 1024 * 1024, upload_url: expect.stringMatching(/\/upload\/tus$/) });
    expect(await tierOf(2 * 1024 ** 3)).toMatchObject({ upload_tier: "tier_3", protocol: "tus" });
    expect(await tierOf(20 * 1024 ** 3)).toMatchObject({ upload_tier: "tier_4", protocol: "tus" });
  });

  it("tier 1: a multipart POST is streamed into the store, verified, analysed; progress events follow the states", async () => {
    const m = await createMigration();
    const data = randomBytes(3 * 1024 * 1024 + 17);
    expect((await owner.api.post(`/migrations/${m.id}/upload/init?file_name=acme.zip&file_size=${data.length}`)).body.upload_tier).toBe("tier_1");
    const up = await directUpload(m.id, data, sha(data));
    expect(up).toMatchObject({ status: 200, body: { size_bytes: data.length, sha256: sha(data) } });
    await waitFor(async () => (await owner.api.get(`/migrations/${m.id}`)).body.status === "analyzed", "the analysis", 15_000);
    const got = (await owner.api.get(`/migrations/${m.id}`)).body;
    expect(got).toMatchObject({ erp_version_detected: "17.0", recommended_cpu: 1, recommended_ram_mb: 2048, sha256: sha(data), file_name: "acme.zip", upload_tier: "tier_1", monthly_savings: 70 });
    // An analysis that names no PostgreSQL or Enterprise need (made before them) asks the target for nothing.
    expect((await member.api.get(`/migrations/${m.id}/analysis`)).body).toEqual({ migration_id: m.id, ...ACME_ANALYSIS, sha256: sha(data), sha256_source: "declared", requirements: [] });
    const { rows } = await cp.database.pool.query<{ data: { status: string; current_step: string | null } }>("select data from org_events where type = 'migration_progress' and data->>'migration_id' = $1 order by id", [m.id]);
    const seen = rows.map((r) => `${r.data.status}/${r.data.current_step}`);
    expect(seen).toEqual(expect.arrayContaining(["pending/null", "uploading/uploading", "uploading/verifying", "uploading/analyzing", "analyzed/null"]));
    expect(rows.every((r) => "progress_percent" in r.data && "error_message" in r.data)).toBe(true);
  }, 30_000);

  it("an integrity mismatch fails the migration with a clear error_message and keeps nothing", async () => {
    const before = await storedFiles();
    const m = await createMigration();
    const data = randomBytes(200_000);
    await owner.api.post(`/migrations/${m.id}/upload/init?file_name=x.zip&file_size=${data.length}`);
    const up = await directUpload(m.id, data, sha(Buffer.from("something else")));
    expect(up).toMatchObject({ status: 422, body: { error: "upload_checksum_mismatch" } });
    const got = (await owner.api.get(`/migrations/${m.id}`)).body;
    expect(got.status).toBe("failed");
    expect(got.error_message).toMatch(/^Integrity check failed: received 200000 bytes with sha256 [0-9a-f]{64}, but 200000 bytes with sha256 [0-9a-f]{64} were declared; nothing was kept/);
    expect(await storedFiles()).toEqual(before);
  });

  it("tier 2: tus chunks, a cut connection resumed from HEAD's Upload-Offset, then verified and analysed", async () => {
    const m = await createMigration();
    const data = randomBytes(52 * 1024 * 1024);
    const init = (await owner.api.post(`/migrations/${m.id}/upload/init?file_name=big.zip&file_size=${data.length}`)).body;
    expect(init.upload_tier).toBe("tier_2");
    const auth = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    const meta = `filename ${Buffer.from("big.zip").toString("base64")},sha256 ${Buffer.from(sha(data)).toString("base64")}`;
    const created = await raw("POST", onServer(init.upload_url), { ...auth, "upload-length": data.length, "upload-metadata": meta });
    if (created === "cut") throw new Error("cut");
    expect(created.status).toBe(201);
    const uploadUrl = String(created.headers.location);
    expect(uploadUrl).toMatch(/\/upload\/tus\/[0-9a-f-]{36}\.[0-9a-f]{32}$/);
    const chunk = init.chunk_size_bytes as number;
    // First chunk whole, the second one cut half-way.
    const first = await raw("PATCH", uploadUrl, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": 0 }, data.subarray(0, chunk));
    expect(first !== "cut" && first.status).toBe(204);
    expect(await raw("PATCH", uploadUrl, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": chunk, "content-length": chunk }, data.subarray(chunk, 2 * chunk), chunk / 2)).toBe("cut");
    // The client asks where to continue.
    let offset = 0;
    await waitFor(async () => {
      const head = await raw("HEAD", uploadUrl, auth);
      offset = head === "cut" ? 0 : Number(head.headers["upload-offset"]);
      return offset > chunk;
    }, "the cut chunk's bytes to be kept", 10_000);
    expect(offset).toBeLessThan(2 * chunk);
    let last: Awaited<ReturnType<typeof raw>> = "cut";
    while (offset < data.length) {
      const end = Math.min(data.length, offset + chunk);
      last = await raw("PATCH", uploadUrl, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": offset }, data.subarray(offset, end));
      if (last === "cut") throw new Error("cut");
      expect(last.status).toBe(204);
      offset = Number(last.headers["upload-offset"]);
    }
    expect(last !== "cut" && last.headers["x-checksum-sha256"]).toBe(sha(data));
    await waitFor(async () => (await owner.api.get(`/migrations/${m.id}`)).body.status === "analyzed", "the analysis", 15_000);
    expect(analysed).toContain(data.length);
    // A client that lost the last PATCH's answer asks again: the upload is complete, not gone.
    const done = await raw("HEAD", uploadUrl, auth);
    expect(done !== "cut" && [done.status, done.headers["upload-offset"], done.headers["upload-length"], done.headers["x-checksum-sha256"]]).toEqual([200, String(data.length), String(data.length), sha(data)]);
    // Its last chunk sent again: refused with the API's error, nothing changes.
    const again = await raw("PATCH", uploadUrl, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": data.length - 10 }, data.subarray(data.length - 10));
    expect(again !== "cut" && [again.status, JSON.parse(again.body).error]).toEqual([404, "not_found"]);
    expect((await owner.api.get(`/migrations/${m.id}`)).body.status).toBe("analyzed");
    // The tus folder keeps nothing of a finished upload.
    expect((await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(m.id))).toEqual([]);
  }, 60_000);

  it("parallel parts (tus concatenation): three parts sent at once, one cut and resumed, joined in order, verified and analysed", async () => {
    const m = await createMigration();
    const data = randomBytes(52 * 1024 * 1024);
    const init = (await owner.api.post(`/migrations/${m.id}/upload/init?file_name=big.zip&file_size=${data.length}&sha256=${sha(data)}`)).body;
    const auth = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    const bounds = [0, 20 * 1024 * 1024, 40 * 1024 * 1024, data.length];
    const parts = await Promise.all(
      [0, 1, 2].map(async (i) => {
        const created = await raw("POST", onServer(init.upload_url), { ...auth, "upload-concat": "partial", "upload-length": bounds[i + 1]! - bounds[i]! });
        if (created === "cut") throw new Error("cut");
        expect(created.status).toBe(201);
        return { url: String(created.headers.location), bytes: data.subarray(bounds[i]!, bounds[i + 1]!) };
      }),
    );
    expect(parts.every((p) => /\/upload\/tus\/[0-9a-f-]{36}\.p[0-9a-f]{32}$/.test(p.url))).toBe(true);
    const patch = (url: string, offset: number, bytes: Buffer, cutAfter?: number) =>
      raw("PATCH", url, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": offset, "content-length": bytes.length }, bytes, cutAfter);
    // The middle part's connection is cut half-way; the others go through meanwhile.
    const [, cut] = await Promise.all([patch(parts[0]!.url, 0, parts[0]!.bytes), patch(parts[1]!.url, 0, parts[1]!.bytes, 8 * 1024 * 1024), patch(parts[2]!.url, 0, parts[2]!.bytes)]);
    expect(cut).toBe("cut");
    // Joining now is refused: a part misses bytes.
    const early = await raw("POST", onServer(init.upload_url), { ...auth, "upload-concat": `final;${parts.map((p) => p.url).join(" ")}` });
    expect(early !== "cut" && early.status).toBe(409);
    expect(early !== "cut" && JSON.parse(early.body).error).toBe("upload_incomplete");
    let offset = 0;
    await waitFor(async () => {
      const head = await raw("HEAD", parts[1]!.url, auth);
      offset = head === "cut" ? 0 : Number(head.headers["upload-offset"]);
      return offset > 0;
    }, "the cut part's bytes to be kept", 10_000);
    const rest = await patch(parts[1]!.url, offset, parts[1]!.bytes.subarray(offset));
    expect(rest !== "cut" && rest.status).toBe(204);
    // Progress counts every part's bytes.
    expect((await owner.api.get(`/migrations/${m.id}`)).body.bytes_received).toBe(data.length);
    const joined = await raw("POST", onServer(init.upload_url), { ...auth, "upload-concat": `final;${parts.map((p) => p.url).join(" ")}` });
    if (joined === "cut") throw new Error("cut");
    expect(joined.status).toBe(201);
    expect(joined.headers["x-checksum-sha256"]).toBe(sha(data));
    // The final upload is a resource: HEAD on its Location says complete.
    const finalUrl = String(joined.headers.location);
    expect(finalUrl).toMatch(new RegExp(`/upload/tus/${m.id}\\.[0-9a-f]{32}$`));
    const done = await raw("HEAD", finalUrl, auth);
    expect(done !== "cut" && [done.status, done.headers["upload-offset"], done.headers["upload-length"]]).toEqual([200, String(data.length), String(data.length)]);
    await waitFor(async () => (await owner.api.get(`/migrations/${m.id}`)).body.status === "analyzed", "the analysis", 15_000);
    expect((await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(m.id))).toEqual([]);
  }, 60_000);

  it("parts joined in the wrong order fail the integrity check and keep nothing", async () => {
    const m = await createMigration();
    const data = randomBytes(2 * 1024 * 1024);
    await owner.api.post(`/migrations/${m.id}/upload/init?file_name=b.zip&file_size=${data.length}&sha256=${sha(data)}`);
    // 2 MB is tier_1 by size, whose tus route is refused: the record is given a resumable tier to keep this test small.
    await cp.app.services.migrations.repo.update(m.id, { uploadTier: "tier_2" });
    const url = `${base}/migrations/${m.id}/upload/tus`;
    const auth = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    const half = data.length / 2;
    const urls: string[] = [];
    for (const bytes of [data.subarray(0, half), data.subarray(half)]) {
      const created = await raw("POST", url, { ...auth, "upload-concat": "partial", "upload-length": bytes.length });
      if (created === "cut") throw new Error("cut");
      urls.push(String(created.headers.location));
      const sent = await raw("PATCH", urls.at(-1)!, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": 0 }, bytes);
      expect(sent !== "cut" && sent.status).toBe(204);
    }
    const joined = await raw("POST", url, { ...auth, "upload-concat": `final;${urls.reverse().join(" ")}` });
    expect(joined !== "cut" && joined.status).toBe(422);
    expect((await owner.api.get(`/migrations/${m.id}`)).body).toMatchObject({ status: "failed" });
    expect((await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(m.id))).toEqual([]);
  }, 30_000);

  it("a 20 GB declaration with 1 MB sent stays an unfinished upload: nothing stored, nothing analysed, resumable", async () => {
    const m = await createMigration();
    const declared = 20 * 1024 ** 3;
    const init = (await owner.api.post(`/migrations/${m.id}/upload/init?file_name=huge.zip&file_size=${declared}&sha256=${"a".repeat(64)}`)).body;
    expect(init.upload_tier).toBe("tier_4");
    // The direct endpoint refuses it: wrong tier.
    expect((await directUpload(m.id, randomBytes(10), "a".repeat(64))).body.error).toBe("wrong_upload_tier");
    const auth = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    expect(await raw("POST", onServer(init.upload_url), { ...auth, "upload-length": 1000 })).toMatchObject({ status: 400 });
    const created = await raw("POST", onServer(init.upload_url), { ...auth, "upload-length": declared });
    if (created === "cut") throw new Error("cut");
    const url = String(created.headers.location);
    const res = await raw("PATCH", url, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": 0 }, randomBytes(1024 * 1024));
    expect(res !== "cut" && res.headers["upload-offset"]).toBe(String(1024 * 1024));
    const head = await raw("HEAD", url, auth);
    expect(head !== "cut" && head.headers["upload-offset"]).toBe(String(1024 * 1024));
    const got = (await owner.api.get(`/migrations/${m.id}`)).body;
    expect(got).toMatchObject({ status: "uploading", current_step: "uploading", file_size_bytes: declared, sha256: null });
    expect(await storeHead(`migrations/${demo.organization_id}/${m.id}/backup`)).toBeNull();
    // Cancel discards the half-upload at once.
    expect((await owner.api.post(`/migrations/${m.id}/cancel`)).body).toMatchObject({ status: "cancelled" });
    expect((await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(m.id))).toEqual([]);
  }, 30_000);

  it("once cancelled, an upload answers 409 upload_not_initialized to HEAD and PATCH: a chunk on its way when the cancel came, and requests after its files were removed", async () => {
    const auth = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    const size = 4 * 1024 * 1024;
    /** A migration with a created tus upload of `size` bytes (given a resumable tier to keep the test small, as above). */
    async function tusUpload() {
      const m = await createMigration();
      await owner.api.post(`/migrations/${m.id}/upload/init?file_name=b.zip&file_size=${size}&sha256=${"a".repeat(64)}`);
      await cp.app.services.migrations.repo.update(m.id, { uploadTier: "tier_2" });
      const created = await raw("POST", `${base}/migrations/${m.id}/upload/tus`, { ...auth, "upload-length": size });
      if (created === "cut") throw new Error("cut");
      expect(created.status).toBe(201);
      return { id: m.id, url: String(created.headers.location) };
    }
    const filesOf = async (id: string) => (await readdir(cp.app.services.migrations.tus.dir)).filter((n) => n.startsWith(id));
    const patch = (url: string, offset: number, bytes = randomBytes(1024)) => raw("PATCH", url, { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": offset }, bytes);
    const refusal = (id: string) => ({ error: "upload_not_initialized", message: `Migration ${id} is cancelled: call upload/init first` });
    /** HEAD (no body in HTTP: its status), then a PATCH (its body): both the API's refusal of a cancelled migration. */
    async function refusedAfterCancel(id: string, url: string, offset: number) {
      const head = await raw("HEAD", url, auth);
      expect(head !== "cut" && head.status).toBe(409);
      const res = await patch(url, offset);
      if (res === "cut") throw new Error("cut");
      expect(res.status).toBe(409);
      expect(JSON.parse(res.body)).toMatchObject(refusal(id));
    }

    // A chunk on its way: half of it on the server when the migration is cancelled, then the rest.
    const sending = await tusUpload();
    const half = 1024 * 1024;
    const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(sending.url, { method: "PATCH", headers: { ...auth, "content-type": "application/offset+octet-stream", "upload-offset": 0, "content-length": 2 * half } }, (res) => {
        const parts: Buffer[] = [];
        res.on("data", (c: Buffer) => parts.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(parts).toString() }));
      });
      req.on("error", reject);
      req.write(randomBytes(half));
      void waitFor(async () => (await stat(path.join(cp.app.services.migrations.tus.dir, sending.url.split("/").at(-1)!)).catch(() => null))?.size === half, "the first half on the server", 10_000)
        .then(async () => expect((await owner.api.post(`/migrations/${sending.id}/cancel`)).status).toBe(200))
        .then(() => req.end(randomBytes(half)), reject);
    });
    const last = await answer;
    expect(last.status).toBe(409);
    expect(JSON.parse(last.body)).toMatchObject({ ...refusal(sending.id), request_id: expect.any(String) });
    await refusedAfterCancel(sending.id, sending.url, 2 * half);
    // Its files go once the chunk's request is over.
    await waitFor(async () => (await filesOf(sending.id)).length === 0, "the cancelled upload's files to be removed", 5_000);

    // Cancelled between chunks: its files are gone at once; HEAD and PATCH are refused all the same.
    const between = await tusUpload();
    const first = await patch(between.url, 0, randomBytes(half));
    expect(first !== "cut" && first.status).toBe(204);
    expect((await owner.api.post(`/migrations/${between.id}/cancel`)).status).toBe(200);
    expect(await filesOf(between.id)).toEqual([]);
    await refusedAfterCancel(between.id, between.url, half);
  }, 30_000);
});

describe("after the analysis", () => {
  async function analysedMigration() {
    const m = await createMigration();
    const data = randomBytes(100_000);
    await owner.api.post(`/migrations/${m.id}/upload/init?file_name=a.zip&file_size=${data.length}&sha256=${sha(data)}`);
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array(data)]), "a.zip");
    expect((await fetch(`${base}/migrations/${m.id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form })).status).toBe(200);
    await waitFor(async () => (await owner.api.get(`/migrations/${m.id}`)).body.status === "analyzed", "the analysis", 15_000);
    return m;
  }

  it("available-vms, configure (own servers only), start only once ready, unlink only once linked, cancel", async () => {
    const m = await analysedMigration();
    const vms = await member.api.get(`/migrations/${m.id}/available-vms`);
    expect(vms.status).toBe(200);
    expect(vms.body).toEqual([expect.objectContaining({ id: demo.server_id, cpu_cores: 4, available_cpu: 2, available_memory_gb: 4 })]);
    expect((await owner.api.post(`/migrations/${m.id}/start`)).body.error).toBe("migration_not_ready");
    const other = await createDemoOrganization(cp.database.db, cp.app.services);
    expect((await owner.api.post(`/migrations/${m.id}/configure`, { target_vm_id: other.server_id })).body.error).toBe("server_not_found");
    const conf = await owner.api.post(`/migrations/${m.id}/configure`, { target_vm_id: demo.server_id, target_domain: "erp.acme.example", git_branch: "main" });
    expect(conf).toMatchObject({ status: 200, body: { status: "ready", target_vm_id: demo.server_id, target_domain: "erp.acme.example", git_branch: "main" } });
    expect((await owner.api.post(`/migrations/${m.id}/unlink-environment`)).body.error).toBe("migration_not_linked");
    expect((await owner.api.post(`/migrations/${m.id}/retry`)).body.error).toBe("migration_not_retryable");
    expect((await owner.api.post(`/migrations/${m.id}/cancel`)).body).toMatchObject({ status: "cancelled", migration_id: m.id });
    expect((await owner.api.post(`/migrations/${m.id}/cancel`)).body.error).toBe("migration_not_cancellable");
  }, 30_000);

  it("DELETE removes the record and the stored bytes", async () => {
    const m = await analysedMigration();
    const key = `migrations/${demo.organization_id}/${m.id}/backup`;
    expect(await storeHead(key)).not.toBeNull();
    const del = await owner.api.delete(`/migrations/${m.id}`);
    expect(del).toMatchObject({ status: 200, body: { deleted: true, storage_deleted: true } });
    expect(await storeHead(key)).toBeNull();
    expect((await owner.api.get(`/migrations/${m.id}`)).status).toBe(404);
  }, 30_000);

  it("a failed analysis is retried: retry_count goes up and the analysis runs again", async () => {
    const m = await analysedMigration();
    await cp.app.services.migrations.repo.update(m.id, { status: "failed", analysis: null, errorMessage: "Analysis failed: x", currentStep: "analyzing" });
    const r = await owner.api.post(`/migrations/${m.id}/retry`);
    expect(r.body).toMatchObject({ status: "uploading", retry_count: 1 });
    await waitFor(async () => (await owner.api.get(`/migrations/${m.id}`)).body.status === "analyzed", "the analysis again", 15_000);
  }, 30_000);

  it("the cleanup job removes the bytes of cancelled migrations, and of failed ones past their retention", async () => {
    const m = await analysedMigration();
    const key = `migrations/${demo.organization_id}/${m.id}/backup`;
    await owner.api.post(`/migrations/${m.id}/cancel`);
    expect(await storeHead(key)).not.toBeNull();
    expect(await cp.app.services.migrations.bytes.cleanup()).toBeGreaterThanOrEqual(1);
    expect(await storeHead(key)).toBeNull();
    expect((await owner.api.get(`/migrations/${m.id}`)).body.status).toBe("cancelled");
    const { rows } = await cp.database.pool.query("select name from pgboss.schedule where name = 'migrations.cleanup'");
    expect(rows).toHaveLength(1);
  }, 30_000);
});

function storeHead(key: string) {
  return createObjectStore({ kind: "local", dir: cp.backupDir }).head(key);
}
