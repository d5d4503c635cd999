// Concurrent uploads of one organisation against its bounds, over real HTTP on a control plane
// with a real PostgreSQL (intake/upload-quota.ts, intake.repo.ts reserve, tus-uploads.ts):
// - 20 upload/inits of 1,000 bytes at once against a quota of 10,000: exactly 10 are accepted
//   and receive their backup, the others answer 413 upload_quota_exceeded and stay pending;
//   the stored bytes never pass the quota (each init checked the total, then wrote its own
//   declared size, in separate steps: several read the same total and all passed);
// - 20 tus part creations at once, of 20 migrations, when the organisation has 990 parts of
//   its 1,000: exactly 10 are created (each migration's creations took turns, not the
//   organisation's: all 20 counted 990).
import { randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { rawRequest as raw } from "../support/http.ts";

const QUOTA = 10_000;
let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, migrationQuotaBytes: QUOTA });
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}/api/v1`;
}, 60_000);

afterAll(async () => {
  await cp?.close();
});

/** A fresh organisation (the quota and the part bound are per organisation) and its owner. */
async function organisation(): Promise<{ owner: Person; organizationId: string }> {
  const org = await createDemoOrganization(cp.database.db, cp.app.services);
  return { owner: await addPerson(cp.app, "org_owner", { organizationId: org.organization_id }), organizationId: org.organization_id };
}

async function migrations(owner: Person, organizationId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await owner.api.post("/migrations", { organization_id: organizationId, source_type: "vendor_paas", project_name: `Acme ${i}`, data_processing_consent: true });
    expect(res.status).toBe(201);
    ids.push(res.body.id as string);
  }
  return ids;
}


describe("the organisation's quota under concurrent uploads", () => {
  it("20 uploads of 1,000 bytes at once against 10,000: exactly 10 accepted and stored, 10 refused with 413 upload_quota_exceeded", async () => {
    const { owner, organizationId } = await organisation();
    const ids = await migrations(owner, organizationId, 20);
    const auth = { authorization: `Bearer ${owner.token}` };
    const upload = async (id: string) => {
      const init = await fetch(`${base}/migrations/${id}/upload/init?file_name=b.zip&file_size=1000`, { method: "POST", headers: auth });
      const initBody = (await init.json()) as { error?: string };
      if (init.status !== 200) return { id, status: init.status, error: initBody.error };
      const form = new FormData();
      form.append("file", new Blob([new Uint8Array(randomBytes(1000))]), "b.zip");
      const up = await fetch(`${base}/migrations/${id}/upload/direct`, { method: "POST", headers: auth, body: form });
      return { id, status: up.status, error: ((await up.json()) as { error?: string }).error };
    };
    const results = await Promise.all(ids.map(upload));

    const accepted = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status !== 200);
    expect(accepted).toHaveLength(10);
    expect(refused.map((r) => [r.status, r.error])).toEqual(Array.from({ length: 10 }, () => [413, "upload_quota_exceeded"]));
    const { rows } = await cp.database.pool.query<{ stored: string; n: string }>(
      "select coalesce(sum(stored_size_bytes), 0)::text as stored, count(*)::text as n from migrations where organization_id = $1 and storage_key is not null",
      [organizationId],
    );
    expect(rows[0]).toEqual({ stored: String(QUOTA), n: "10" });
    // A refused migration is untouched: still pending, nothing declared.
    for (const r of refused) expect((await owner.api.get(`/migrations/${r.id}`)).body.status).toBe("pending");
  }, 120_000);
});

describe("the organisation's tus parts under concurrent creations", () => {
  it("990 of 1,000 parts taken, 20 creations at once of 20 migrations: exactly 10 created, 10 refused with too_many_upload_parts", async () => {
    const { owner, organizationId } = await organisation();
    const tus = { authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" };
    /** Migrations uploading `size` bytes through tus (small sizes are tier_1: the record is given tier_2, as migration-upload-bounds.test.ts does). */
    const uploading = async (n: number, size: number) => {
      const ids = await migrations(owner, organizationId, n);
      for (const id of ids) {
        expect((await owner.api.post(`/migrations/${id}/upload/init?file_name=p.zip&file_size=${size}`)).status).toBe(200);
        await cp.app.services.migrations.repo.update(id, { uploadTier: "tier_2" });
      }
      return ids;
    };
    const part = (id: string) => raw("POST", `${base}/migrations/${id}/upload/tus`, { ...tus, "upload-concat": "partial", "upload-length": 1 });

    // 10 uploads of 99 one-byte parts each: 990 parts of the organisation's 1,000.
    const fillers = await uploading(10, 100);
    await Promise.all(
      fillers.map(async (id) => {
        for (let i = 0; i < 99; i++) expect((await part(id)).status).toBe(201);
      }),
    );
    const racers = await uploading(20, 10);
    const results = await Promise.all(racers.map((id) => part(id)));

    expect(results.filter((r) => r.status === 201)).toHaveLength(10);
    const refusals = results.filter((r) => r.status !== 201);
    expect(refusals.map((r) => [r.status, JSON.parse(r.body).error])).toEqual(Array.from({ length: 10 }, () => [409, "too_many_upload_parts"]));
    const theirs = new Set([...fillers, ...racers]);
    const parts = (await readdir(cp.app.services.migrations.tus.dir)).filter((n) => !n.endsWith(".json") && theirs.has(n.slice(0, 36)));
    expect(parts).toHaveLength(1000);
  }, 180_000);
});
