// A shop's life on each hosted Odoo version, end to end: one real control plane, one real
// agent process and the real Docker engine, on the stand-in that behaves as that version of
// Odoo (test/images/README.md). Per tag, through the public API as a customer scripts it: a
// project on that version with a production and a staging environment and an add-on
// repository (HTTPS on 127.0.0.1) holding one custom module; production deployed with the
// module installed at v1, as the image's own user (16.0/17.0: uid 101; 18.0/19.0: uid 100),
// initialised for a country; deployed again with nothing changed: nothing upgraded, no
// snapshot; v2 pushed and deployed: upgraded after a pre-deploy snapshot; a v3
// pushed whose upgrade fails after its SQL (deleting rows) was committed: the deploy fails,
// the snapshot is put back (module at v2, the rows there) and the ERP serves again; a backup
// kept on the server, restored onto production: what was written after it is gone; the same backup
// restored onto staging: production's data, neutralised by the image's own `odoo neutralize`
// and re-keyed with staging's address. The four tags run at once (and each tag's staging
// beside its production), so the file takes about as long as one tag.
// The migration of an Odoo-format backup per tag is test/e2e/migration.e2e.test.ts.
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { environmentLayout } from "../../apps/agent/src/executor/environment/environment-layout.ts";
import { addonRepository, erpPort, erpSql, keyPool, type AddonRepo } from "../support/erp-versions.ts";
import { removeEnvironmentObjects, startShop, type Shop } from "../support/real-agent.ts";
import { waitForValue, waitUntil } from "../support/wait.ts";

const SERIES = ["16.0", "17.0", "18.0", "19.0"] as const;
/** The user of each official image (odoo/docker's Dockerfiles; 18.0: odoo/odoo issue 183106). */
const IMAGE_USER = { "16.0": { uid: 101, gid: 101 }, "17.0": { uid: 101, gid: 101 }, "18.0": { uid: 100, gid: 101 }, "19.0": { uid: 100, gid: 101 } };
const MODULE = "berth_shop";
const manifest = (version: string) => `{'name': 'Shop', 'version': '${version}', 'depends': ['base'], 'license': 'LGPL-3'}\n`;

let shop: Shop;
let api: ReturnType<typeof keyPool>;
const repos = new Map<string, AddonRepo>();
const envIds: string[] = [];

beforeAll(async () => {
  // The repositories first: serving them makes the test CA the agent's git trusts.
  for (const series of SERIES) repos.set(series, await addonRepository());
  // A deploy waits for no certificate: staging's name resolves nowhere here.
  shop = await startShop("ERP versions", { agentEnv: { BERTH_CERTIFICATE_WAIT: "0" } });
  envIds.push(shop.envId);
  api = keyPool(shop.cp.app, shop.d.organization_id);
}, 120_000);

afterAll(async () => {
  await shop?.agent.cleanup();
  // Nine environments' containers, volumes and networks: each on its own, all at once.
  await Promise.all([shop?.cp.close(), ...envIds.map((id) => removeEnvironmentObjects([id])), ...[...repos.values()].map((r) => r.remove())]);
}, 120_000);

interface Task {
  id: string;
  status: string;
  error_message: string | null;
  modules: { name: string; action: string; from_version: string | null; to_version: string | null }[] | null;
}

/** POSTs an action (202 with a task), then polls the task until it ends. */
async function act(path: string, body?: unknown): Promise<Task & { backup_id?: string }> {
  const res = await (await api.write()).post(path, body);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(202);
  const task = await waitForValue(`${path} (task ${res.body.task_id}) to end`, async () => {
    const t = (await (await api.read()).get(`/deployments/${res.body.task_id}`)).body as Task;
    return ["completed", "failed", "cancelled"].includes(t.status) ? t : undefined;
  }, { timeoutMs: 300_000, intervalMs: 500, detail: () => shop.agent.output.slice(-3000) });
  return { ...task, ...(res.body.backup_id ? { backup_id: res.body.backup_id as string } : {}) };
}

async function created(path: string, body: unknown): Promise<string> {
  const res = await (await api.write()).post(path, body);
  expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(201);
  return res.body.id as string;
}

/** The ERP serves a page that needs its registry (/web/login: 200); /web/health alone passes while the registry is broken. */
async function serves(environmentId: string): Promise<void> {
  await waitUntil(`the ERP of ${environmentId} to serve /web/login`, async () => {
    const res = await fetch(`http://127.0.0.1:${await erpPort(environmentId)}/web/login`, { signal: AbortSignal.timeout(5000) }).catch(() => null);
    return res?.status === 200;
  }, { timeoutMs: 20_000, intervalMs: 250 });
}

async function notes(environmentId: string): Promise<string[]> {
  return (await erpSql(environmentId, "select note from berth_probe order by id")).split("\n");
}
const moduleVersion = (environmentId: string) => erpSql(environmentId, `select state || ' ' || latest_version from ir_module_module where name = '${MODULE}'`);
/** What a copy must not share with production, and what neutralising it leaves behind (ir_config_parameter). */
async function params(environmentId: string): Promise<{ uuid: string; secret: string; url: string; neutralized: string | null }> {
  const row = await erpSql(
    environmentId,
    `select json_build_object('uuid', max(value) filter (where key = 'database.uuid'), 'secret', max(value) filter (where key = 'database.secret'),
       'url', max(value) filter (where key = 'web.base.url'), 'neutralized', max(value) filter (where key = 'database.is_neutralized')) from ir_config_parameter`,
  );
  return JSON.parse(row);
}
/** The scheduled actions and mail servers that are on. */
async function running(environmentId: string): Promise<{ crons: string; mailServers: string }> {
  const row = await erpSql(
    environmentId,
    `select json_build_object('crons', (select string_agg(cron_name, ',' order by id) from ir_cron where active),
       'mailServers', (select string_agg(smtp_host, ',' order by id) from ir_mail_server where active))`,
  );
  return JSON.parse(row);
}
/** A row written through the ERP, as its users write data. */
async function write(environmentId: string, note: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${await erpPort(environmentId)}/berth/add?note=${note}`);
  expect(res.status).toBeLessThan(400);
}

it.concurrent.each(SERIES)("%s: deploy, upgrade, failed upgrade rolled back, backup, restore and a staging copy, with a real agent", async (series) => {
  const repo = repos.get(series)!;
  const tag = series.replace(".", "");
  const stagingDomain = `staging-${tag}.shop.example.test`;
  // 16.0/17.0: a version equal to the series, which Odoo records as "<series>.<series>"
  // (adapt_version; 18.0 would make such a module uninstallable: it gets a plain version there).
  const v1 = Number.parseInt(series, 10) <= 17 ? series : "1.0";
  await repo.push("v1", { [`${MODULE}/__manifest__.py`]: manifest(v1) });

  const projectId = await created("/projects", { name: `Shop ${series}`, server_id: shop.d.server_id, erp_version: series });
  const prod = await created("/environments", { project_id: projectId, name: "production", cpu_cores: 1, ram_mb: 1024 });
  const staging = await created("/environments", { project_id: projectId, name: "staging", cpu_cores: 1, ram_mb: 1024, domain: stagingDomain });
  envIds.push(prod, staging);
  for (const env of [prod, staging]) await created(`/environments/${env}/addon-repositories`, { git_url: repo.url, branch: "main" });

  // 1. Production deployed with the custom module installed; then staging, without it,
  // while production goes on (it is needed only for the copy in 5).
  const first = await act(`/environments/${prod}/deploy`, { modules: { upgrade: [MODULE] }, init: { country: "be" } });
  expect(first.status, first.error_message ?? "").toBe("completed");
  const stagingDeployed = act(`/environments/${staging}/deploy`);
  stagingDeployed.catch(() => {}); // awaited in 4; a failure is reported there
  expect(first.modules).toEqual([{ name: MODULE, action: "installed", from_version: null, to_version: `${series}.${v1}` }]);
  await serves(prod);
  expect(await moduleVersion(prod)).toBe(`installed ${series}.${v1}`);
  // The image's own user owns what the ERP reads (its configuration only it can read), and
  // the country is set as Odoo's database manager sets it: the company's, its currency, the
  // users' single time zone.
  const prodLayout = environmentLayout(shop.agent.stateDir, prod);
  for (const path of [prodLayout.configFile, prodLayout.dataDir]) expect(statSync(path)).toMatchObject(IMAGE_USER[series]);
  expect(statSync(prodLayout.configFile).mode & 0o777).toBe(0o600);
  expect(
    await erpSql(prod, "select c.code || ' ' || cur.name || ' ' || (select p.tz from res_users u join res_partner p on p.id = u.partner_id where u.login = 'admin') " +
      "from res_company co join res_partner cp on cp.id = co.partner_id join res_country c on c.id = cp.country_id join res_currency cur on cur.id = co.currency_id"),
  ).toBe("BE EUR Europe/Brussels");
  await write(prod, "before-upgrade");

  // 1b. Deployed again with nothing changed: nothing upgraded, no snapshot taken.
  const again = await act(`/environments/${prod}/deploy`);
  expect(again.status, again.error_message ?? "").toBe("completed");
  expect(again.modules).toEqual([]);

  // 2. v2 pushed and deployed ("changed", the default): upgraded, after a pre-deploy snapshot.
  await repo.push("v2", { [`${MODULE}/__manifest__.py`]: manifest("2.0") });
  const upgrade = await act(`/environments/${prod}/deploy`);
  expect(upgrade.status, upgrade.error_message ?? "").toBe("completed");
  expect(upgrade.modules).toEqual([{ name: MODULE, action: "upgraded", from_version: `${series}.${v1}`, to_version: `${series}.2.0` }]);
  expect(await moduleVersion(prod)).toBe(`installed ${series}.2.0`);
  const backups = async () => (await (await api.read()).get(`/environments/${prod}/backups`)).body.data as { id: string; task_id: string; backup_type: string; status: string; size_bytes: number | null; storage: string | null }[];
  // One pre-deploy snapshot: the upgrade's (the deploy with nothing changed took none).
  expect((await backups()).filter((b) => b.backup_type === "pre_deploy")).toEqual([expect.objectContaining({ task_id: upgrade.id, status: "completed" })]);
  await serves(prod);

  // 3. A v3 whose upgrade deletes every note and commits that, then fails (FAIL_UPGRADE: the
  // stand-in raises in that module's loading, with Odoo's lines and exit code): the deploy
  // fails and the pre-deploy snapshot is put back.
  await write(prod, "before-failed-upgrade");
  await repo.push("v3", {
    [`${MODULE}/__manifest__.py`]: manifest("3.0"),
    [`${MODULE}/berth_upgrade.sql`]: "delete from berth_probe;\n",
    [`${MODULE}/FAIL_UPGRADE`]: "boom\n",
  });
  const failed = await act(`/environments/${prod}/deploy`);
  expect(failed.status).toBe("failed");
  expect(failed.error_message).toMatch(new RegExp(`module ${MODULE} failed \\(exit code \\d+\\): rolled back to [0-9a-f-]{36}`));
  expect(await moduleVersion(prod)).toBe(`installed ${series}.2.0`);
  expect(await notes(prod)).toEqual(expect.arrayContaining(["before-upgrade", "before-failed-upgrade"]));
  await serves(prod);
  // The snapshot it went back to is the live database now, no longer listed as a backup.
  expect((await backups()).filter((b) => b.task_id === failed.id)).toEqual([]);
  const { uuid, secret } = await params(prod);

  // 4 and 5. A backup (kept on the server), then restored onto production (what was written after it
  // is gone) and, at the same time, onto staging (production's data, neutralised, re-keyed).
  const backup = await act(`/environments/${prod}/backups`, { comment: `before the ${series} accident` });
  expect(backup.status, backup.error_message ?? "").toBe("completed");
  expect((await backups()).find((b) => b.id === backup.backup_id)).toMatchObject({ status: "completed", storage: "local", size_bytes: expect.any(Number) });
  expect((await backups()).find((b) => b.id === backup.backup_id)!.size_bytes).toBeGreaterThan(0);
  await write(prod, "after-backup");
  const stagingFirst = await stagingDeployed;
  expect(stagingFirst.status, stagingFirst.error_message ?? "").toBe("completed");
  const [restore, copy] = await Promise.all([
    act(`/environments/${prod}/restore`, { backup_id: backup.backup_id }),
    act(`/environments/${staging}/restore`, { backup_id: backup.backup_id }),
  ]);
  expect(restore.status, restore.error_message ?? "").toBe("completed");
  expect(copy.status, copy.error_message ?? "").toBe("completed");
  await Promise.all([serves(prod), serves(staging)]);
  const restored = await notes(prod);
  expect(restored).toEqual(expect.arrayContaining(["before-upgrade", "before-failed-upgrade"]));
  expect(restored).not.toContain("after-backup");
  // Its own backup brings production back as it was, not as a copy.
  expect(await params(prod)).toEqual({ uuid, secret, url: "http://localhost:8069", neutralized: null });
  expect(await running(prod)).toEqual({ crons: "Base: Auto-vacuum internal data,Base: Portal Users Deletion", mailServers: "smtp.customer.example" });

  // Staging: production's data and module, neutralised by the image's own odoo neutralize
  // (only the autovacuum job runs; no mail server on, not even Odoo's dummy one on an invalid
  // host, so its mail goes to the catcher), and re-keyed: its own uuid and secret, its own address.
  expect(await notes(staging)).toEqual(restored);
  expect(await moduleVersion(staging)).toBe(`installed ${series}.2.0`);
  expect(await running(staging)).toEqual({ crons: "Base: Auto-vacuum internal data", mailServers: null });
  const copied = await params(staging);
  expect(copied).toMatchObject({ url: `https://${stagingDomain}`, neutralized: "true" });
  expect(copied.uuid).not.toBe(uuid);
  expect(copied.secret).not.toBe(secret);
  // The file store came along, handed to this image's user.
  expect(statSync(join(environmentLayout(shop.agent.stateDir, staging).dataDir, "filestore", "odoo"))).toMatchObject(IMAGE_USER[series]);
}, 600_000);
