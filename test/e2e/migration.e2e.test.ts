// Moving an ERP in, end to end: a backup made as the vendor's database manager makes it (a
// real PostgreSQL 15 database dumped by pg_dump, zipped with manifest.json and a file store)
// is uploaded through the platform API to a real control plane, analysed by the real
// analysis, configured for the server of a real agent process, and started: the agent's
// deploy fetches it through the signed link, restores it with psql into the environment's
// database in Docker, writes the file store, neutralises the copy, starts the ERP and checks
// its health; the migration completes at 100 with the restore-once flag set. Then the
// restored data is counted in the ERP's own database, the file store files are where the ERP
// reads them, the scheduled actions and mail servers are off, and the ERP answers. Once per
// hosted version (16.0 to 19.0), each on the stand-in that behaves as that version of Odoo.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { addPerson, type Person } from "../support/people.ts";
import { removeEnvironmentObjects, startShop, type Shop } from "../support/real-agent.ts";
import { waitForValue } from "../support/wait.ts";
import {
  createErpDatabase,
  fileStoreFiles,
  manifestOf,
  startPg15,
  zipOf,
} from "../../apps/control-plane/src/modules/migrations/analysis/backup-fixtures.test-helpers.ts";

let shop: Shop;
let owner: Person;
const SERIES = ["16.0", "17.0", "18.0", "19.0"] as const;
const backups = new Map<string, Buffer>();
const files = fileStoreFiles([2048, 70_000, 5]);
const envIds: string[] = [];
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

beforeAll(async () => {
  // The backups: per version, an ERP-shaped database as that version leaves it (every module installed), with
  // base's tables and rows (the autovacuum job and another active one, a production mail
  // server, its uuid and secret), two more active scheduled actions and one archived, another
  // active mail server and one archived, and production's address.
  const pg = await startPg15();
  try {
    for (const series of SERIES) {
      const name = `acme${series.replace(".", "")}`;
      createErpDatabase(pg, name, `${series}.1.3`);
      pg.sql(
        name,
        `alter table ir_module_module add column demo boolean not null default false, add column write_date timestamp default now();
         update ir_module_module set state = 'installed' where state in ('to upgrade', 'to remove');
         update ir_module_module set state = 'uninstalled' where state = 'to install';
         insert into ir_cron (cron_name, active) values ('Send invoices', true), ('Fetch rates', true), ('Old', false);
         insert into ir_mail_server (name, smtp_host, active) values ('smtp.acme.example', 'smtp.acme.example', true), ('old', 'old.acme.example', false);
         update ir_config_parameter set value = 'https://erp.acme.example' where key = 'web.base.url';
         update ir_config_parameter set value = '00000000-0000-4000-8000-00000000acme' where key = 'database.uuid';`,
      );
      backups.set(
        series,
        await zipOf([
          { name: "dump.sql", bytes: pg.dump(name) },
          { name: "manifest.json", bytes: manifestOf(name, series, ["base", "web", "mail"]) },
          ...files,
        ]),
      );
    }
  } finally {
    await pg.stop();
  }
  shop = await startShop("Already here");
  envIds.push(shop.envId);
  owner = await addPerson(shop.cp.app, "org_owner", { organizationId: shop.d.organization_id });
}, 180_000);

afterAll(async () => {
  await shop?.agent.cleanup();
  await shop?.cp.close();
  await removeEnvironmentObjects(envIds);
});

const origin = () => `http://127.0.0.1:${(shop.cp.app.server.address() as { port: number }).port}`;

/** A container of the environment with this role (berth.role), by the labels the agent gives them. */
function containerOf(environmentId: string, role: string): string {
  const out = execFileSync("docker", ["ps", "-q", "--filter", `label=berth.environment_id=${environmentId}`, "--filter", `label=berth.role=${role}`]).toString().trim();
  expect(out, `a running ${role} container`).not.toBe("");
  return out.split("\n")[0]!;
}
const sql = (environmentId: string, query: string) =>
  execFileSync("docker", ["exec", containerOf(environmentId, "db"), "psql", "-U", "odoo", "-d", "odoo", "-tAX", "-c", query]).toString().trim();

it.each(SERIES)("%s: a vendor's backup uploaded, analysed, started: the ERP serves the restored data at the end of the 12 steps", async (series) => {
  const backup = backups.get(series)!;
  // This machine has 2 cores: every other environment (the demo organisation's two never
  // deployed, an earlier version's migration) gives up its share, so this migration fits.
  await shop.cp.database.pool.query("update environments set is_active = false where organization_id = $1 and id <> $2", [shop.d.organization_id, shop.envId]);
  const created = await owner.api.post("/migrations", {
    organization_id: shop.d.organization_id,
    source_type: "vendor_paas",
    project_name: "Acme moved in",
    data_processing_consent: true,
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  await owner.api.post(`/migrations/${id}/upload/init?file_name=acme_2026-11-26.zip&file_size=${backup.length}&sha256=${sha(backup)}`);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(backup)]), "acme_2026-11-26.zip");
  const up = await fetch(`${origin()}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form });
  expect(up.status).toBe(200);

  const analysed = await waitForValue("the analysis", async () => {
    const m = (await owner.api.get(`/migrations/${id}`)).body;
    if (m.status === "failed") throw new Error(m.error_message);
    return m.status === "analyzed" ? m : undefined;
  }, { timeoutMs: 60_000, intervalMs: 250 });
  expect(analysed.erp_version_detected).toBe(series);

  // The server fits once its agent has reported live figures.
  await waitForValue("the server among those that fit", async () => {
    const vms = await owner.api.get(`/migrations/${id}/available-vms`);
    return vms.body.some((v: { id: string }) => v.id === shop.d.server_id) ? true : undefined;
  }, { timeoutMs: 60_000, intervalMs: 500 });
  expect((await owner.api.post(`/migrations/${id}/configure`, { target_vm_id: shop.d.server_id })).body.status).toBe("ready");
  expect((await owner.api.post(`/migrations/${id}/start`)).status).toBe(202);

  const done = await waitForValue("the migration to end", async () => {
    const m = (await owner.api.get(`/migrations/${id}`)).body;
    return m.status === "completed" || m.status === "failed" ? m : undefined;
  }, { timeoutMs: 480_000, intervalMs: 500 });
  expect(done.status, `${done.error_message}\n${shop.agent.output.slice(-3000)}`).toBe("completed");
  expect(done).toMatchObject({ progress_percent: 100, current_step: "completed" });
  const env = done.environment_id as string;
  envIds.push(env);
  expect(done.steps.map((s: { status: string }) => s.status)).toEqual([
    "completed", "completed", "completed", "completed", "completed", "completed", "completed",
    "skipped", // no Git repository
    "completed", "completed", "completed", "completed",
  ]);

  // The restored rows, counted in the environment's own database.
  expect(sql(env, "select count(*) from res_partner")).toBe("25");
  expect(sql(env, "select count(*) from res_users where active and not share")).toBe("4");
  expect(sql(env, "select string_agg(name, ',' order by name) from ir_module_module where state = 'installed'")).toContain("x_acme_sales");
  // Neutralised (not declared production) by the image's own odoo neutralize: only the
  // autovacuum job still runs; the only mail server on is Odoo's dummy one on an invalid host.
  expect(sql(env, "select string_agg(cron_name, ',' order by id) from ir_cron where active")).toBe("Base: Auto-vacuum internal data");
  expect(sql(env, "select string_agg(smtp_host, ',') from ir_mail_server where active")).toBe("invalid");
  expect(sql(env, "select value from ir_config_parameter where key = 'database.is_neutralized'")).toBe("true");
  // Re-keyed: not production's uuid, nor its address.
  expect(sql(env, "select value from ir_config_parameter where key = 'database.uuid'")).not.toBe("00000000-0000-4000-8000-00000000acme");
  expect(sql(env, "select value from ir_config_parameter where key = 'web.base.url'")).not.toBe("https://erp.acme.example");
  // The file store where the ERP reads it, byte for byte, owned by the ERP's user.
  const erp = containerOf(env, "erp");
  for (const f of files) {
    const inside = `/var/lib/odoo/filestore/odoo/${f.name.slice("filestore/".length)}`;
    const got = execFileSync("docker", ["exec", erp, "sha256sum", inside]).toString().split(" ")[0];
    expect(got).toBe(sha(f.bytes));
  }
  // The ERP answers on the restored database.
  const { rows } = await shop.cp.database.pool.query(
    "select c.result->>'host_port' as port from agent_commands c where c.deployment_id = $1",
    [done.deployment_id],
  );
  const health = await fetch(`http://127.0.0.1:${rows[0].port}/web/health`);
  expect(health.status).toBe(200);
  // The restore-once flag: the next deploy keeps this data.
  const { rows: flags } = await shop.cp.database.pool.query("select migration_restore_completed from environments where id = $1", [env]);
  expect(flags[0].migration_restore_completed).toBe(true);
}, 600_000);
