// What a migration's target must have, over real HTTP (issue 31): GET analysis lists each
// requirement compared with the target now, and start refuses (409, nothing made) while one
// is not met: a backup with Enterprise modules until the organisation (or platform) has the
// Enterprise repository as an add-on repository or the ERP image is declared Enterprise; a
// dump from a newer pg_dump than the database image's PostgreSQL until the image is new
// enough. Meeting the requirement lets the same migration start.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import type { AnalysisFields } from "../../apps/control-plane/src/modules/migrations/record/migration-schemas.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationRecordingCommands } from "../support/demo-agent.ts";
import { ACME_ANALYSIS } from "../support/fixed-analysis.ts";
import { addPerson, type Person } from "../support/people.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let origin: string;
let d: DemoOrganization;
let owner: Person;
let stop: () => void;

/** The analysis each uploaded backup gets, by its first byte. */
const ANALYSES: Record<number, AnalysisFields> = {
  1: { ...ACME_ANALYSIS, enterprise_modules: ["web_enterprise", "web_studio"], postgres_major_required: 16, pg_dump_version: "16.4" },
  2: { ...ACME_ANALYSIS, enterprise_modules: [], postgres_major_required: 17, pg_dump_version: "17.2", postgres_version: "17.2" },
  3: { ...ACME_ANALYSIS, erp_version: "18.0", enterprise_modules: ["web_enterprise"], postgres_major_required: 16, pg_dump_version: "16.4" },
};

beforeAll(async () => {
  cp = await startControlPlane({
    listen: true,
    heartbeatMs: 1000,
    jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
    analyzeBackup: async (source) => {
      const first = await new Promise<number>((resolve, reject) => {
        void source.open({ start: 0, end: 0 }).then((s) => s.once("data", (c: Buffer) => resolve(c[0]!)).once("error", reject));
      });
      return ANALYSES[first]!;
    },
  });
  origin = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  ({ d, stop } = await demoOrganizationRecordingCommands(cp, origin));
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
}, 60_000);

afterAll(async () => {
  stop?.();
  await cp?.close();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A migration whose backup (analysed as ANALYSES[kind]) is analysed and configured for the demo server. */
async function readyMigration(kind: number): Promise<string> {
  const id = (await owner.api.post("/migrations", { organization_id: d.organization_id, source_type: "on_premise", project_name: `Acme ${randomBytes(3).toString("hex")}`, data_processing_consent: true })).body.id as string;
  const backup = Buffer.concat([Buffer.from([kind]), randomBytes(1000)]);
  await owner.api.post(`/migrations/${id}/upload/init?file_name=acme.zip&file_size=${backup.length}&sha256=${sha(backup)}`);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(backup)]), "acme.zip");
  expect((await fetch(`${origin}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form })).status).toBe(200);
  await waitUntil("the analysis", async () => (await owner.api.get(`/migrations/${id}`)).body.status === "analyzed", { timeoutMs: 15_000, intervalMs: 100 });
  expect((await owner.api.post(`/migrations/${id}/configure`, { target_vm_id: d.server_id })).body.status).toBe("ready");
  return id;
}

const requirements = async (id: string) => (await owner.api.get(`/migrations/${id}/analysis`)).body.requirements as { code: string; met: boolean; message: string }[];

describe("a backup with Enterprise modules", () => {
  it("cannot start until the organisation has the Enterprise repository; then it starts", async () => {
    const id = await readyMigration(1);
    const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
    expect(analysis).toMatchObject({ enterprise_modules: ["web_enterprise", "web_studio"], postgres_major_required: 16, pg_dump_version: "16.4" });
    expect(analysis.requirements).toEqual([
      { code: "database_image_too_old", met: true, message: expect.stringContaining("the database image postgres:16 runs PostgreSQL 16") },
      { code: "enterprise_addons_required", met: false, message: expect.stringContaining("exist only in the ERP's Enterprise add-ons") },
    ]);

    const refused = await owner.api.post(`/migrations/${id}/start`);
    expect(refused).toMatchObject({ status: 409, body: { error: "enterprise_addons_required", message: expect.stringContaining(`/api/v1/organizations/${d.organization_id}/addon-repositories`) } });
    expect((await owner.api.get(`/migrations/${id}`)).body).toMatchObject({ status: "ready", project_id: null, environment_id: null });

    // The Enterprise repository on another version's branch is not it.
    const wrong = await owner.api.post(`/organizations/${d.organization_id}/addon-repositories`, { git_url: "https://github.com/odoo/enterprise.git", branch: "16.0" });
    expect(wrong.status).toBe(201);
    expect((await requirements(id))[1]).toMatchObject({ met: false, message: expect.stringContaining("is on branch 16.0, not 17.0") });
    expect((await owner.api.post(`/migrations/${id}/start`)).body.error).toBe("enterprise_addons_required");

    expect((await owner.api.post(`/organizations/${d.organization_id}/addon-repositories`, { git_url: "https://github.com/odoo/enterprise.git", branch: "17.0", name: "enterprise-17" })).status).toBe(201);
    expect((await requirements(id))[1]).toMatchObject({ code: "enterprise_addons_required", met: true, message: expect.stringContaining("enterprise-17") });
    expect(await owner.api.post(`/migrations/${id}/start`)).toMatchObject({ status: 202, body: { status: "processing" } });
  });

  it("starts on an ERP image the administrator declared an Enterprise build", async () => {
    const id = await readyMigration(3);
    expect((await owner.api.post(`/migrations/${id}/start`)).body.error).toBe("enterprise_addons_required");
    await cp.app.services.images.set({ enterprise: ["18.0"] });
    expect((await requirements(id)).find((r) => r.code === "enterprise_addons_required")).toMatchObject({ met: true, message: expect.stringContaining("declared an Enterprise build") });
    expect((await owner.api.post(`/migrations/${id}/start`)).status).toBe(202);
  });
});

describe("a dump from a newer pg_dump than the database image", () => {
  it("cannot start on PostgreSQL 16 (pg_dump 17 writes SET transaction_timeout); with a PostgreSQL 17 image it starts", async () => {
    const id = await readyMigration(2);
    expect(await requirements(id)).toEqual([
      {
        code: "database_image_too_old",
        met: false,
        message: expect.stringMatching(/^The backup \(dumped by pg_dump 17\.2 from PostgreSQL 17\.2\) restores into PostgreSQL 17 or later, but the database image postgres:16 runs PostgreSQL 16/),
      },
    ]);
    const refused = await owner.api.post(`/migrations/${id}/start`);
    expect(refused).toMatchObject({ status: 409, body: { error: "database_image_too_old" } });
    expect((await owner.api.get(`/migrations/${id}`)).body.status).toBe("ready");

    await cp.app.services.images.set({ db: "postgres:17" });
    expect((await requirements(id))[0]).toMatchObject({ met: true });
    expect((await owner.api.post(`/migrations/${id}/start`)).status).toBe(202);
  });
});

it("the OpenAPI document shows the analysis' new fields and the start's new codes", async () => {
  const doc = (await cp.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).json() as { components: { schemas: Record<string, { properties?: Record<string, unknown> }> } };
  expect(Object.keys(doc.components.schemas.MigrationAnalysis!.properties!)).toEqual(expect.arrayContaining(["requirements", "enterprise_modules", "postgres_major_required", "pg_dump_version"]));
  expect(JSON.stringify(doc.components.schemas.Error409)).toMatch(/enterprise_addons_required.*database_image_too_old|database_image_too_old.*enterprise_addons_required/);
});
