// The files resumable uploads leave in the upload folder are bounded, over real HTTP (tus 1.0)
// on a control plane with a real PostgreSQL (intake/tus-uploads.ts):
// - 30 creations of a migration's upload without a byte sent leave one file, not 30 (each
//   creation made a file that stayed until a cancel or a new upload/init); the last upload
//   still completes, an earlier one's URL answers 404;
// - a creation the client marks as a part itself (x-berth-upload-part, the header the server
//   uses inside) is an ordinary creation, not 120 parts past every bound;
// - the cleanup job removes an upload file that received nothing for 24 hours, and keeps a
//   fresher one.
import { createHash, randomBytes } from "node:crypto";
import { readdir, utimes } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { rawRequest as raw } from "../support/http.ts";

const SIZE = 1000;
let cp: TestControlPlane;
let base: string;
let demo: DemoOrganization;
let owner: Person;

beforeAll(async () => {
  // From 100 bytes, tus (tier_2): a resumable upload of 1,000 bytes.
  cp = await startControlPlane({ listen: true, migrationTiers: { tier_1: 100, tier_2: 500 * 1024 * 1024, tier_3: 5 * 1024 ** 3 } });
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}/api/v1`;
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id });
}, 60_000);

afterAll(async () => {
  await cp?.close();
});


const tus = () => ({ authorization: `Bearer ${owner.token}`, "tus-resumable": "1.0.0" });

/** A migration initialised for a resumable upload of SIZE bytes. */
async function uploading(): Promise<string> {
  const created = await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "vendor_paas", project_name: "Acme", data_processing_consent: true });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const init = await owner.api.post(`/migrations/${id}/upload/init?file_name=b.zip&file_size=${SIZE}`);
  expect(init.body).toMatchObject({ upload_tier: "tier_2", protocol: "tus" });
  return id;
}

/** The migration's files in the upload folder: uploads (and parts), and their metadata. */
async function filesOf(id: string) {
  const names = (await readdir(cp.app.services.migrations.tus.dir).catch(() => [] as string[])).filter((n) => n.startsWith(`${id}.`));
  return { data: names.filter((n) => !n.endsWith(".json")), meta: names.filter((n) => n.endsWith(".json")) };
}

describe("repeated creations", () => {
  it("30 creations without a byte sent leave one upload file; the last completes, an earlier one answers 404", async () => {
    const id = await uploading();
    const locations: string[] = [];
    for (let i = 0; i < 30; i++) {
      const created = await raw("POST", `${base}/migrations/${id}/upload/tus`, { ...tus(), "upload-length": SIZE });
      expect(created.status).toBe(201);
      locations.push(created.headers.location!);
    }
    const files = await filesOf(id);
    expect(files.data).toHaveLength(1);
    expect(files.meta).toHaveLength(1);
    expect(locations.at(-1)).toContain(files.data[0]);

    expect((await raw("HEAD", locations[0]!, tus())).status).toBe(404);
    const backup = randomBytes(SIZE);
    const done = await raw("PATCH", locations.at(-1)!, { ...tus(), "upload-offset": 0, "content-type": "application/offset+octet-stream" }, backup);
    expect(done.status).toBe(204);
    expect(done.headers["x-checksum-sha256"]).toBe(createHash("sha256").update(backup).digest("hex"));
    expect((await filesOf(id)).data).toEqual([]);
  }, 60_000);

  it("a creation the client marks as a part itself (x-berth-upload-part) is an ordinary one: 120 of them leave one file", async () => {
    const id = await uploading();
    for (let i = 0; i < 120; i++) {
      const created = await raw("POST", `${base}/migrations/${id}/upload/tus`, { ...tus(), "upload-length": SIZE, "x-berth-upload-part": "1" });
      expect(created.status).toBe(201);
    }
    const files = await filesOf(id);
    expect(files.data).toHaveLength(1);
    expect(files.data[0]).toMatch(new RegExp(`^${id}\\.[0-9a-f]{32}$`));
    await owner.api.post(`/migrations/${id}/cancel`);
  }, 60_000);
});

describe("the cleanup job", () => {
  it("removes an upload file idle for 24 hours, keeps a fresher one; the migration can create its upload again", async () => {
    const stale = await uploading();
    const created = await raw("POST", `${base}/migrations/${stale}/upload/tus`, { ...tus(), "upload-length": SIZE });
    expect(created.status).toBe(201);
    // Half of it arrives, then the client goes away.
    const half = await raw("PATCH", created.headers.location!, { ...tus(), "upload-offset": 0, "content-type": "application/offset+octet-stream" }, randomBytes(SIZE / 2));
    expect(half.status).toBe(204);
    await cp.app.services.migrations.bytes.cleanup();
    expect((await filesOf(stale)).data).toHaveLength(1);

    // A day and a minute later (the files' times set back, as the disk would have them): meanwhile
    // another migration's upload has just begun, and stays.
    const dayAgo = new Date(Date.now() - 24 * 3600_000 - 60_000);
    const { data, meta } = await filesOf(stale);
    for (const name of [...data, ...meta]) await utimes(path.join(cp.app.services.migrations.tus.dir, name), dayAgo, dayAgo);
    const fresh = await uploading();
    expect((await raw("POST", `${base}/migrations/${fresh}/upload/tus`, { ...tus(), "upload-length": SIZE })).status).toBe(201);
    await cp.app.services.migrations.bytes.cleanup();
    expect(await filesOf(stale)).toEqual({ data: [], meta: [] });
    expect((await filesOf(fresh)).data).toHaveLength(1);

    // The stale upload's URL answers 404 (HEAD); a new creation takes the whole backup.
    expect((await raw("HEAD", created.headers.location!, tus())).status).toBe(404);
    const again = await raw("POST", `${base}/migrations/${stale}/upload/tus`, { ...tus(), "upload-length": SIZE });
    expect(again.status).toBe(201);
    expect((await raw("PATCH", again.headers.location!, { ...tus(), "upload-offset": 0, "content-type": "application/offset+octet-stream" }, randomBytes(SIZE))).status).toBe(204);
  }, 60_000);
});
