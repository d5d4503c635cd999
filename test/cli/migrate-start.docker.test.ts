// `berth migrate <file> --server <id> --start --follow` with a real agent running Docker: a
// backup made as the vendor's database manager makes it (pg_dump of an ERP-shaped database,
// zipped with manifest.json and a file store) is uploaded, analysed, configured for the
// agent's server, started and followed through its steps to the end: exit 0, the report and
// the steps on stdout, the migration completed. Needs PostgreSQL 15 and Docker.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { cliRunner } from "../support/cli.ts";
import { addPerson, type Person } from "../support/people.ts";
import { removeEnvironmentObjects, startShop, type Shop } from "../support/real-agent.ts";
import { urlOf } from "../support/sse.ts";
import { waitForValue } from "../support/wait.ts";
import { createErpDatabase, fileStoreFiles, manifestOf, startPg15, zipOf } from "../../apps/control-plane/src/modules/migrations/analysis/backup-fixtures.test-helpers.ts";

let shop: Shop;
let owner: Person;
const file = path.join(mkdtempSync(path.join(tmpdir(), "berth-cli-migrate-start-")), "acme.zip");
const envIds: string[] = [];
const cli = cliRunner();

beforeAll(async () => {
  // An ERP 17.0's database (base's tables: scheduled actions, mail servers, parameters) with one more job and mail server.
  const pg = await startPg15();
  try {
    createErpDatabase(pg, "acme", "17.0.1.3");
    pg.sql(
      "acme",
      `alter table ir_module_module add column demo boolean not null default false, add column write_date timestamp default now();
       update ir_module_module set state = 'installed' where state in ('to upgrade', 'to remove');
       update ir_module_module set state = 'uninstalled' where state = 'to install';
       insert into ir_cron (cron_name, active) values ('Send invoices', true);
       insert into ir_mail_server (name, smtp_host, active) values ('smtp.acme.example', 'smtp.acme.example', true);`,
    );
    const zip = await zipOf([{ name: "dump.sql", bytes: pg.dump("acme") }, { name: "manifest.json", bytes: manifestOf("acme", "17.0", ["base", "web", "mail"]) }, ...fileStoreFiles([2048, 5000])]);
    writeFileSync(file, zip);
  } finally {
    await pg.stop();
  }
  shop = await startShop("Already here");
  envIds.push(shop.envId);
  // A small machine: the demo organisation's never-deployed environments give up their share, so the migration fits.
  await shop.cp.database.pool.query("update environments set is_active = false where organization_id = $1 and id <> $2", [shop.d.organization_id, shop.envId]);
  owner = await addPerson(shop.cp.app, "org_owner", { organizationId: shop.d.organization_id });
}, 180_000);

afterAll(async () => {
  const migrated = await shop?.cp.database.pool.query<{ id: string }>("select id from environments where organization_id = $1", [shop.d.organization_id]);
  await shop?.agent.cleanup();
  await shop?.cp.close();
  await removeEnvironmentObjects([...envIds, ...(migrated?.rows.map((r) => r.id) ?? [])]);
});

it("uploads, analyses, configures, starts and follows a migration to its end", async () => {
  // The server fits once its agent has reported live figures.
  await waitForValue("the server's first figures", async () => ((await shop.cp.database.pool.query("select 1 from server_stats where server_id = $1 limit 1", [shop.d.server_id])).rowCount ? true : undefined), { timeoutMs: 60_000, intervalMs: 500 });
  const r = await cli.run(["migrate", file, "--consent", "--name", "Acme moved in", "--server", shop.d.server_id, "--start", "--follow"], {
    env: { BERTH_URL: urlOf(shop.cp), BERTH_TOKEN: owner.token },
    timeoutMs: 400_000,
  });
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
  expect(r.stdout).toMatch(/ERP version:\s+17\.0/);
  expect(r.stdout).toContain("==> restoring_database");
  expect(r.stdout).toMatch(/✓ Migration ([0-9a-f-]{36}) completed/);
  const id = /✓ Migration ([0-9a-f-]{36}) completed/.exec(r.stdout)![1]!;
  expect((await owner.api.get(`/migrations/${id}`)).body).toMatchObject({ status: "completed", progress_percent: 100 });
}, 500_000);
