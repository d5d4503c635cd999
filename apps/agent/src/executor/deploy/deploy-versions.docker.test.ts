// One deploy life per Odoo version, on the strict stand-in of each tag (test/images/README.md,
// "Fidelity points"): the image's own user (16.0/17.0: uid 101; 18.0/19.0: uid 100) owns
// odoo.conf and the data dir, so the ERP reads its configuration and serves; the demo flags
// of the version (19.0 refuses --without-demo=all); a redeploy with nothing changed upgrades
// nothing and takes no snapshot (manifest versions compared as Odoo's adapt_version records
// them: '<series>' becomes '<series>.<series>'); a failed upgrade is reported as failed with
// the module Odoo's lines name, and rolled back, the previous release serving its login page;
// a good one is upgraded after a snapshot;
// a backup restored into its own environment comes back as it was, and into another one it is
// a copy: the image's own `odoo neutralize` runs on it and it gets a new uuid, secret and
// address before it serves.
// Needs `bash .ci/docker-setup.sh` first.
import { randomUUID } from "node:crypto";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExecutorHarness, createGitRepository, deployParams, finishSuite, requireTestImages, type Run } from "../executor.test-helpers.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf } from "../environment/erp-container.ts";
import { erpUserOf } from "../environment/erp-image-user.ts";

const SUITE = "executor-versions";
/** The user of each official image (odoo/docker's Dockerfiles; 18.0: odoo/odoo issue 183106). */
const TAGS = [
  { series: "16.0", uid: 101, gid: 101 },
  { series: "17.0", uid: 101, gid: 101 },
  { series: "18.0", uid: 100, gid: 101 },
  { series: "19.0", uid: 100, gid: 101 },
];

const manifest = (version: string) => `{'name': 'Versioned', 'version': '${version}', 'depends': ['base'], 'license': 'LGPL-3'}\n`;

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

describe.each(TAGS)("Odoo $series", ({ series, uid, gid }) => {
  const image = `berth-test/erp:${series}`;
  const h = createExecutorHarness(`${SUITE}-${series.replace(".", "")}`, { healthTimeoutMs: 10_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const layout = environmentLayout(h.stateDir, env);
  const gitDir = mkdtempSync(join(tmpdir(), "berth-exec-versions-git-"));
  let repo: Awaited<ReturnType<typeof createGitRepository>>;
  const deploy = (commit: string, more: Partial<Parameters<typeof deployParams>[1]> = {}) =>
    h.run("deploy", deployParams(env, { image, erp_version: series, git: { url: repo.url, branch: "main", commit }, ...more }));
  const param = async (environmentId: string, key: string) => {
    const r = await h.docker.exec(`berth-${environmentId}-db`, ["psql", "-U", "odoo", "-d", "odoo", "-X", "-qAt", "-c", `SELECT value FROM ir_config_parameter WHERE key = '${key}'`], { deadlineMs: 30_000 });
    return r.stdout.trim();
  };
  const login = async (l = layout) => {
    const erp = await h.docker.inspectContainer(l.erpContainer);
    const port = await hostPortOf(h.docker, erp!.id);
    return (await fetch(`http://127.0.0.1:${String(port)}/web/login`, { signal: AbortSignal.timeout(10_000) })).status;
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    repo = await createGitRepository(gitDir);
  }, 60_000);
  afterAll(() => finishSuite(`${SUITE}-${series.replace(".", "")}`, h, gitDir), 180_000);

  it("reads the image's user from the image, and the ERP reads its configuration as that user", async () => {
    expect(await erpUserOf(h.docker, image)).toEqual({ uid, gid });
    // 16.0/17.0: a version equal to the series, which Odoo records as "<series>.<series>"
    // (18.0 would make such a module uninstallable: it gets a plain version there).
    const version = Number.parseInt(series, 10) <= 17 ? series : "1.0";
    const v1 = await repo.commit("v1", { "berth_versioned/__manifest__.py": manifest(version) });
    const result = resultOf(await deploy(v1, { modules: { upgrade: ["berth_versioned"] }, init: { without_demo: true, country: "be" } }));
    expect(result).toMatchObject({ healthy: true, modules: [{ name: "berth_versioned", action: "installed", to_version: `${series}.${version}` }] });
    for (const path of [layout.configFile, layout.dataDir]) expect(statSync(path)).toMatchObject({ uid, gid });
    expect(statSync(layout.configFile).mode & 0o777).toBe(0o600);
    expect(await login()).toBe(200);
    // The country as Odoo's database manager sets it: the company's, its currency, the users' single time zone.
    const company = await h.docker.exec(layout.dbContainer, ["psql", "-U", "odoo", "-d", "odoo", "-X", "-qAt", "-c",
      "SELECT c.code || ' ' || cur.name || ' ' || (SELECT p.tz FROM res_users u JOIN res_partner p ON p.id = u.partner_id WHERE u.login = 'admin') " +
        "FROM res_company co JOIN res_partner cp ON cp.id = co.partner_id JOIN res_country c ON c.id = cp.country_id JOIN res_currency cur ON cur.id = co.currency_id"], { deadlineMs: 30_000 });
    expect(company.stdout.trim()).toBe("BE EUR Europe/Brussels");
  }, 240_000);

  it("upgrades nothing and takes no snapshot when nothing changed", async () => {
    const again = resultOf(await deploy(await repo.commit("v1 again")));
    expect(again).toMatchObject({ healthy: true, modules: [], snapshot_id: null });
  }, 240_000);

  it("reports a failed upgrade as failed, with the module Odoo names, and rolls it back", async () => {
    const broken = await repo.commit("v2", { "berth_versioned/__manifest__.py": manifest("2.0"), "berth_versioned/FAIL_UPGRADE": "boom\n" });
    const run = await deploy(broken);
    expect(run.outcome.ok).toBe(false);
    if (run.outcome.ok) return;
    expect(run.outcome.error).toMatchObject({ code: "module_update_failed", message: expect.stringMatching(/module berth_versioned failed .*rolled back to/s) });
    // What the run did (the plan's "upgrade (version …)" line comes before it).
    const reported = run.logs.filter((l) => /^Module berth_versioned: (failed|upgraded|installed)\b/.test(l.message)).map((l) => l.message);
    expect(reported).toEqual(["Module berth_versioned: failed"]);
    expect(await login()).toBe(200);
  }, 240_000);

  it("upgrades a module whose manifest version changed, after a pre-deploy snapshot, and serves", async () => {
    const fixed = await repo.commit("v2 fixed", { "berth_versioned/FAIL_UPGRADE": null });
    const result = resultOf(await deploy(fixed));
    expect(result).toMatchObject({ healthy: true, modules: [{ name: "berth_versioned", action: "upgraded", to_version: `${series}.2.0` }] });
    expect(result.snapshot_id).toEqual(expect.any(String));
    expect(await login()).toBe(200);
  }, 240_000);

  it("restores its own backup as it was; in another environment the backup is a copy, neutralised and re-keyed before it serves", async () => {
    const backupId = randomUUID();
    const backup = resultOf(await h.run("backup", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId }));
    const uuid = await param(env, "database.uuid");
    const own = await h.run("restore", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId });
    expect(resultOf(own)).toMatchObject({ healthy: true });
    expect(await param(env, "database.uuid")).toBe(uuid);
    expect(own.logs.map((l) => l.message).filter((m) => /neutraliz/i.test(m))).toEqual([]);

    const other = randomUUID();
    const otherLayout = environmentLayout(h.stateDir, other);
    resultOf(await h.run("deploy", deployParams(other, { image, erp_version: series })));
    const files = backup.files as { name: string; size: number; sha256: string }[];
    const source = { environment_id: env, path: "/unused", expires_at: new Date(Date.now() + 3_600_000).toISOString(), files };
    const copy = await h.run("restore", { deployment_id: randomUUID(), environment_id: other, backup_id: backupId, source, copy: { base_url: "https://staging.example.test" } });
    expect(resultOf(copy)).toMatchObject({ healthy: true });
    const messages = copy.logs.map((l) => l.message);
    expect(messages).toContainEqual(expect.stringMatching(/^neutralize: .* odoo\.modules\.neutralize: Neutralization finished$/));
    expect(await param(other, "database.is_neutralized")).toBe("true");
    expect(await param(other, "database.uuid")).not.toBe(uuid);
    expect(await param(other, "web.base.url")).toBe("https://staging.example.test");
    // The file store came along, handed to this image's user.
    expect(statSync(join(otherLayout.dataDir, "filestore", "odoo"))).toMatchObject({ uid, gid });
    expect(await login(otherLayout)).toBe(200);
  }, 240_000);
});
