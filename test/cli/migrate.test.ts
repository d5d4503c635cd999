// `berth migrate` against a real control plane with the real backup analysis: an Odoo backup
// made from a real PostgreSQL (pg_dump of an ERP-shaped database, zipped with its manifest
// and file store) is uploaded in one request (tier 1) and its analysis printed as a report;
// a larger one goes by tus, is interrupted (the CLI killed mid-upload) and continued with
// --resume from the server's offset. Needs Debian's PostgreSQL 15 (.ci/docker-setup.sh).
import { afterAll, beforeAll, expect, it } from "vitest";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
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
import { cliRunner } from "../support/cli.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { urlOf } from "../support/sse.ts";
import { waitUntil } from "../support/wait.ts";

const KB = 1024;
const MB = 1024 * KB;
let cp: TestControlPlane;
let demo: DemoOrganization;
let owner: Person;
let pg: Pg15;
let facts: ErpDatabaseFacts;
let dump: Buffer;
const dir = mkdtempSync(path.join(tmpdir(), "berth-cli-migrate-"));
const cli = cliRunner();
let env: Record<string, string>;

beforeAll(async () => {
  // Files over 512 KB go by tus (tier 2), as files over 50 MB do in production.
  cp = await startControlPlane({ listen: true, jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 }, migrationTiers: { tier_1: 512 * KB, tier_2: 500 * MB, tier_3: 5000 * MB } });
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id, projectId: demo.project_id });
  env = { BERTH_URL: urlOf(cp), BERTH_TOKEN: owner.token };
  pg = await startPg15();
  facts = createErpDatabase(pg, "acme_prod", "17.0.1.3");
  dump = pg.dump("acme_prod");
}, 120_000);

afterAll(async () => {
  await pg?.stop();
  await cp?.close();
});

async function backup(name: string, fileStore: number[]): Promise<string> {
  const bytes = await zipOf([
    { name: "dump.sql", bytes: dump },
    { name: "manifest.json", bytes: manifestOf("acme_prod", "17.0", facts.installed) },
    ...fileStoreFiles(fileStore).map((f) => ({ ...f, store: true })),
  ]);
  const file = path.join(dir, name);
  writeFileSync(file, bytes);
  return file;
}

it("uploads a small backup in one request and prints the analysis as a report; --json gives the analysis as the API has it", async () => {
  const file = await backup("acme.zip", [1000, 2500]);
  const r = await cli.run(["migrate", file, "--name", "Acme", "--consent"], { env, timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/Migration [0-9a-f-]{36}: Acme/);
  expect(r.stdout).toMatch(/ERP version:\s+17\.0/);
  expect(r.stdout).toMatch(new RegExp(`Modules:\\s+${facts.installed.length} \\(`));
  expect(r.stdout).toMatch(new RegExp(`Users:\\s+${facts.internalUsers}\\b`));
  expect(r.stdout).toMatch(new RegExp(`Partners:\\s+${facts.activePartners}\\b`));
  expect(r.stdout).toMatch(/Recommended:\s+\d+ CPU, \d+ MB RAM, \d+ GB disk/);
  for (const m of facts.custom) expect(r.stdout).toContain(m);

  const j = await cli.run(["migrate", file, "--json", "--org", demo.organization_id, "--consent"], { env, timeoutMs: 120_000 });
  expect(j.code, j.stderr).toBe(0);
  const { migration, analysis } = JSON.parse(j.stdout) as { migration: { id: string; status: string; upload_tier: string }; analysis: unknown };
  expect(migration).toMatchObject({ status: "analyzed", upload_tier: "tier_1" });
  expect(analysis).toEqual((await owner.api.get(`/migrations/${migration.id}/analysis`)).body);
}, 180_000);

it("a larger backup goes by tus; killed mid-upload, --resume continues from the server's offset and the analysis follows", async () => {
  const file = await backup("big.zip", [6 * MB]);
  const first = cli.start(["migrate", file, "--consent", "--chunk-size", String(32 * KB)], { env });
  first.child.stdin!.end();
  await waitUntil("part of the upload", () => /uploaded .* \(([1-9]\d)%\)/.test(first.stderr()), { timeoutMs: 60_000, intervalMs: 20, detail: () => first.stderr() });
  first.child.kill("SIGKILL");
  await first.done;
  const id = /Migration ([0-9a-f-]{36}) created/.exec(first.stderr())![1]!;
  const before = (await owner.api.get(`/migrations/${id}`)).body as { status: string; upload_tier: string };
  expect(before).toMatchObject({ status: "uploading", upload_tier: "tier_2" });

  const resumed = await cli.run(["migrate", file, "--resume", id], { env, timeoutMs: 120_000 });
  expect(resumed.code, resumed.stderr).toBe(0);
  const at = Number(/Resuming the upload at (\d+) of (\d+) bytes/.exec(resumed.stderr)![1]);
  expect(at).toBeGreaterThan(0);
  expect(at).toBeLessThan(statSync(file).size);
  expect(resumed.stdout).toMatch(/ERP version:\s+17\.0/);
  expect((await owner.api.get(`/migrations/${id}`)).body).toMatchObject({ status: "analyzed", filestore_size_bytes: 6 * MB });

  // Nothing left to resume.
  const again = await cli.run(["migrate", file, "--resume", id], { env });
  expect(again.code).toBe(2);
}, 180_000);

it("without --consent and without a terminal to ask, nothing is created or sent: exit 2", async () => {
  const file = await backup("no-consent.zip", [100]);
  const before = (await owner.api.get(`/migrations?organization_id=${demo.organization_id}&page_size=100`)).body.total as number;
  const r = await cli.run(["migrate", file, "--name", "Not agreed"], { env });
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("pass --consent");
  expect((await owner.api.get(`/migrations?organization_id=${demo.organization_id}&page_size=100`)).body.total).toBe(before);
});
