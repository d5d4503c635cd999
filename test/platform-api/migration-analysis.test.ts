// A migration's analysis with the real streaming analysis, over real HTTP: an Odoo backup
// built from a real PostgreSQL (an ERP-shaped database dumped with pg_dump, zipped with its
// manifest and file store) is uploaded (tier 1), stored, checked and analysed; GET analysis
// answers the facts the backup was made with. A deprecated version, a file that is no
// backup and a dump without the ERP's tables fail the migration with the analysis's code and
// message; an Enterprise backup is analysed with the requirement its start is held to. Needs Debian's PostgreSQL 15
// (`bash .ci/docker-setup.sh` installs it).
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import {
  createErpDatabase,
  fileStoreFiles,
  manifestOf,
  startPg15,
  zipOf,
  type ErpDatabaseFacts,
  type Pg15,
} from "../../apps/control-plane/src/modules/migrations/analysis/backup-fixtures.test-helpers.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let base: string;
let demo: DemoOrganization;
let owner: Person;
let pg: Pg15;
let facts: ErpDatabaseFacts;
let dump: Buffer;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 } });
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}/api/v1`;
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id, projectId: demo.project_id });
  pg = await startPg15();
  facts = createErpDatabase(pg, "acme_prod", "17.0.1.3");
  dump = pg.dump("acme_prod");
}, 120_000);

afterAll(async () => {
  await pg?.stop();
  await cp?.close();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** Creates a migration, uploads `bytes` (tier 1) and waits until it is analysed or failed. */
async function uploaded(bytes: Buffer) {
  const m = (await owner.api.post("/migrations", { organization_id: demo.organization_id, source_type: "on_premise", project_name: "Acme", data_processing_consent: true })).body as { id: string };
  expect((await owner.api.post(`/migrations/${m.id}/upload/init?file_name=acme.zip&file_size=${bytes.length}`)).body.upload_tier).toBe("tier_1");
  const form = new FormData();
  form.append("sha256", sha(bytes));
  form.append("file", new Blob([new Uint8Array(bytes)]), "acme.zip");
  const up = await fetch(`${base}/migrations/${m.id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form });
  expect(up.status).toBe(200);
  await waitUntil("the analysis", async () => ["analyzed", "failed"].includes((await owner.api.get(`/migrations/${m.id}`)).body.status), { timeoutMs: 30_000, intervalMs: 200 });
  return { id: m.id, record: (await owner.api.get(`/migrations/${m.id}`)).body as Record<string, unknown> };
}

describe("a migration's analysis", () => {
  it("reads an Odoo zip as it was made: version, modules, users, partners, sizes, recommendations", async () => {
    const files = fileStoreFiles([1000, 2500]);
    const bytes = await zipOf([{ name: "dump.sql", bytes: dump }, { name: "manifest.json", bytes: manifestOf("acme_prod", "17.0", facts.installed) }, ...files]);
    const { id, record } = await uploaded(bytes);
    expect(record).toMatchObject({ status: "analyzed", erp_version_detected: "17.0", filestore_size_bytes: 3500 });
    const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
    expect(analysis).toMatchObject({
      migration_id: id,
      erp_version: "17.0",
      database_name: "acme_prod",
      database_size_bytes: dump.length,
      filestore_size_bytes: 3500,
      total_size_bytes: dump.length + 3500,
      total_modules: facts.installed.length,
      user_count: facts.internalUsers,
      partner_count: facts.activePartners,
      postgres_version: expect.stringMatching(/^15\./),
      format: "zip",
      warnings: expect.any(Array),
    });
    expect([...analysis.standard_modules, ...analysis.custom_modules].sort()).toEqual(facts.installed);
    expect(analysis.custom_modules).toEqual(expect.arrayContaining(facts.custom));
    expect(analysis.recommended_cpu).toBeGreaterThan(0);
    expect(analysis.recommended_ram_mb).toBeGreaterThan(0);
    expect(analysis.recommended_disk_gb).toBeGreaterThan(0);
  }, 60_000);

  it("fails with the analysis's own words: a deprecated version, a file that is no backup", async () => {
    const old = await zipOf([{ name: "dump.sql", bytes: dump }, { name: "manifest.json", bytes: manifestOf("acme_prod", "15.0", facts.installed) }]);
    const deprecated = await uploaded(old);
    expect(deprecated.record).toMatchObject({ status: "failed", error_message: expect.stringMatching(/^Analysis failed \(erp_version_deprecated\): .*15\.0/) });
    const junk = await uploaded(Buffer.from("these are not the backups you are looking for\n".repeat(100)));
    expect(junk.record).toMatchObject({ status: "failed", error_message: expect.stringMatching(/^Analysis failed \(not_a_backup\): /) });
    expect((await owner.api.get(`/migrations/${junk.id}/analysis`)).status).toBeGreaterThanOrEqual(400);
  }, 60_000);

  it("refuses a PostgreSQL dump that is not the ERP's, whatever its manifest says (erp_tables_missing)", async () => {
    pg.sql("postgres", "create database shop");
    pg.sql("shop", "create table invoices (id serial primary key, total numeric); insert into invoices (total) values (10), (20);");
    const bytes = await zipOf([{ name: "dump.sql", bytes: pg.dump("shop") }, { name: "manifest.json", bytes: manifestOf("shop", "17.0", ["base"]) }]);
    const { record } = await uploaded(bytes);
    expect(record).toMatchObject({
      status: "failed",
      error_message: expect.stringMatching(/^Analysis failed \(erp_tables_missing\): not a database of the ERP: the dump has no ir_module_module, res_partner, res_users tables/),
    });
  }, 60_000);

  it("an Enterprise backup: its Enterprise modules, and the requirement start will hold it to", async () => {
    const ee = createErpDatabase(pg, "acme_ee", "17.0.1.3", { enterprise: true });
    const { id, record } = await uploaded(await zipOf([{ name: "dump.sql", bytes: pg.dump("acme_ee") }, { name: "manifest.json", bytes: manifestOf("acme_ee", "17.0+e-20250703", ee.installed) }]));
    expect(record.status).toBe("analyzed");
    const analysis = (await owner.api.get(`/migrations/${id}/analysis`)).body;
    expect(analysis).toMatchObject({ enterprise_modules: ee.enterprise, postgres_major_required: 15, pg_dump_version: expect.stringMatching(/^15\./) });
    expect(analysis.warnings).toContainEqual(expect.stringContaining("Enterprise (web_studio)"));
    expect(analysis.requirements).toEqual([
      { code: "database_image_too_old", met: true, message: expect.stringContaining("PostgreSQL 15 or later") },
      { code: "enterprise_addons_required", met: false, message: expect.any(String) },
    ]);
  }, 60_000);
});
