// Modules on deploy with the real Docker engine and the stand-in ERP: a new database is
// initialised with base and no demo data before the ERP serves; a listed module is
// installed; a bumped manifest version is upgraded; a module whose upgrade fails halfway
// (FAIL_UPGRADE, after its SQL was committed) fails the deploy and leaves the database,
// the file store and the code exactly as they were, the old ERP serving; pre-deploy
// snapshots are kept by the retention. Needs `bash .ci/docker-setup.sh` first.
import { createHash, randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createExecutorHarness,
  createGitRepository,
  deployParams,
  finishSuite,
  requireTestImages,
  rowsOf,
  type Run,
} from "../executor.test-helpers.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf } from "../environment/erp-container.ts";

const SUITE = "executor-modules";
const ADMIN_LOGIN_PASSWORD = "a-generated-administrator-password";

interface ModuleRow {
  name: string;
  state: string;
  latest_version: string | null;
  demo: boolean;
}

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

const manifest = (version: string) => `{'name': 'Test module', 'version': '${version}', 'author': 'Berth', 'license': 'LGPL-3'}\n`;

describe("module installs, upgrades and the pre-deploy snapshot", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 8_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const layout = environmentLayout(h.stateDir, env);
  const gitDir = mkdtempSync(join(tmpdir(), "berth-exec-modules-git-"));
  let repo: Awaited<ReturnType<typeof createGitRepository>>;

  const deploy = async (commit: string, extra: Partial<Parameters<typeof deployParams>[1]> = {}) =>
    h.run("deploy", deployParams(env, { git: { url: repo.url, branch: "main", commit }, ...extra }));

  const erpPort = async () => {
    const c = await h.docker.inspectContainer(layout.erpContainer);
    if (c === null) throw new Error("no ERP container");
    return hostPortOf(h.docker, c.id);
  };

  const modules = async (): Promise<ModuleRow[]> => {
    const response = await fetch(`http://127.0.0.1:${String(await erpPort())}/berth/modules`, { signal: AbortSignal.timeout(10_000) });
    return (await response.json()) as ModuleRow[];
  };
  const moduleNamed = async (name: string) => (await modules()).find((m) => m.name === name);

  /** Odoo's JSON-RPC sign-in, as the web client posts it. */
  const signIn = async (login: string, password: string): Promise<boolean> => {
    const response = await fetch(`http://127.0.0.1:${String(await erpPort())}/web/session/authenticate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", params: { db: "odoo", login, password } }),
      signal: AbortSignal.timeout(10_000),
    });
    const body = (await response.json()) as { result?: { uid: number }; error?: unknown };
    return body.result?.uid === 2;
  };

  const psql = async (sql: string, database = "odoo") => {
    const result = await h.docker.exec(layout.dbContainer, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", sql], {
      deadlineMs: 60_000,
    });
    if (result.exitCode !== 0) throw new Error(result.stderr);
    return result.stdout.trim();
  };

  /** The database's content: every line of a data-only dump, sorted, hashed. */
  const databaseChecksum = async () => {
    const result = await h.docker.exec(layout.dbContainer, ["pg_dump", "-U", "odoo", "--data-only", "--no-comments", "-d", "odoo"], {
      deadlineMs: 60_000,
    });
    if (result.exitCode !== 0) throw new Error(result.stderr);
    // Recent pg_dump wraps its output in \restrict <random key> ... \unrestrict <key>.
    const sorted = result.stdout
      .split("\n")
      .filter((line) => !/^\\(un)?restrict /.test(line))
      .sort()
      .join("\n");
    return createHash("md5").update(sorted).digest("hex");
  };

  /** The file store: each file's path and content, hashed. */
  const fileStoreChecksum = () => {
    const hash = createHash("md5");
    const walk = (dir: string) => {
      for (const name of readdirSync(dir).sort()) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else hash.update(`${path.slice(layout.dataDir.length)}\0`).update(readFileSync(path));
      }
    };
    walk(join(layout.dataDir, "filestore", "odoo"));
    return hash.digest("hex");
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    repo = await createGitRepository(gitDir);
  }, 60_000);

  afterAll(() => finishSuite(SUITE, h, gitDir), 180_000);

  it("initialises a new database with base and without demo data before the ERP serves; new modules are not installed unless listed", async () => {
    const v1 = await repo.commit("v1", { "berth_sale/__manifest__.py": manifest("1.0"), "berth_extra/__manifest__.py": manifest("1.0") });
    const run = await deploy(v1, { admin_login: { password: ADMIN_LOGIN_PASSWORD, version: "2026-11-26T10:00:00.000Z" } });
    const result = resultOf(run);
    expect(result).toMatchObject({ database: { initialized: true, without_demo: true }, modules: [], backups: [], snapshot_id: null });
    // The administrator signs in with the password the control plane made, not Odoo's admin/admin.
    expect(result.admin_login).toEqual({ login: "admin", version: "2026-11-26T10:00:00.000Z" });
    expect(await signIn("admin", ADMIN_LOGIN_PASSWORD)).toBe(true);
    expect(await signIn("admin", "admin")).toBe(false);
    expect(run.logs.some((l) => l.message.includes(ADMIN_LOGIN_PASSWORD))).toBe(false);
    const init = run.logs.filter((l) => l.step === "starting_container" && l.message.startsWith("init: "));
    expect(init.some((l) => /Loading module base/.test(l.message))).toBe(true);
    const all = await modules();
    expect(all.find((m) => m.name === "base")).toMatchObject({ state: "installed", latest_version: "17.0.1.3", demo: false });
    expect(all.find((m) => m.name === "berth_sale")?.state).toBe("uninstalled");
    expect(all.find((m) => m.name === "berth_extra")?.state).toBe("uninstalled");
    // The master password reached odoo.conf, and is kept 0600 beside it.
    expect(readFileSync(layout.configFile, "utf8")).toMatch(/^admin_passwd = \S{20,}$/m);
    expect(statSync(join(layout.dir, "admin-password")).mode & 0o777).toBe(0o600);
    expect(run.logs.some((l) => l.message.includes(readFileSync(join(layout.dir, "admin-password"), "utf8").trim()))).toBe(false);
  }, 180_000);

  it("installs a listed module (after a pre-deploy snapshot) and records it", async () => {
    const v2 = await repo.commit("v2");
    const result = resultOf(await deploy(v2, { modules: { upgrade: ["berth_sale"] } }));
    expect(result.modules).toEqual([{ name: "berth_sale", action: "installed", from_version: null, to_version: "17.0.1.0" }]);
    expect(result.backups).toHaveLength(1);
    expect(result.backups).toMatchObject([{ kind: "pre_deploy", backup_id: result.snapshot_id }]);
    expect(await moduleNamed("berth_sale")).toMatchObject({ state: "installed", latest_version: "17.0.1.0", demo: false });
    expect(await moduleNamed("berth_extra")).toMatchObject({ state: "uninstalled" });
  }, 180_000);

  it("upgrades a module whose manifest version was bumped (upgrade: changed, the default)", async () => {
    const v3 = await repo.commit("v3", {
      "berth_sale/__manifest__.py": manifest("1.1"),
      "berth_sale/berth_upgrade.sql": "INSERT INTO berth_probe (note) VALUES ('berth_sale 1.1 migrated');",
    });
    const result = resultOf(await deploy(v3));
    expect(result.modules).toEqual([{ name: "berth_sale", action: "upgraded", from_version: "17.0.1.0", to_version: "17.0.1.1" }]);
    expect(await moduleNamed("berth_sale")).toMatchObject({ state: "installed", latest_version: "17.0.1.1" });
    expect((await rowsOf(await erpPort())).rows.map((r) => r.note)).toContain("berth_sale 1.1 migrated");
    // Nothing changed since: the next deploy upgrades nothing and takes no snapshot.
    const again = resultOf(await deploy(v3));
    expect(again).toMatchObject({ modules: [], snapshot_id: null, admin_login: null });
    // Deploys that carry no administrator password leave the database's as it is.
    expect(await signIn("admin", ADMIN_LOGIN_PASSWORD)).toBe(true);
    expect(again.backups).toHaveLength(2);
  }, 240_000);

  it("a module that fails halfway leaves database, file store and code exactly as before, rolled back to the snapshot", async () => {
    const before = { db: await databaseChecksum(), files: fileStoreChecksum(), rows: await rowsOf(await erpPort()) };
    expect(before.rows.addons_version).toBe("v3");
    const v4 = await repo.commit("v4", {
      "berth_sale/__manifest__.py": manifest("1.2"),
      "berth_sale/berth_upgrade.sql": "DELETE FROM berth_probe; CREATE TABLE berth_sale_new (id int);",
      "berth_sale/FAIL_UPGRADE": "",
    });
    // The old version answers whenever the ERP answers during the deploy.
    const seen = new Set<string>();
    let probing = true;
    const probe = (async () => {
      while (probing) {
        try {
          seen.add(String((await rowsOf(await erpPort())).addons_version));
        } catch {
          // Stopped for the snapshot's copy or the rollback's swap.
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const run = await deploy(v4);
    probing = false;
    await probe;
    expect(run.outcome.ok).toBe(false);
    if (run.outcome.ok) return;
    expect(run.outcome.error.code).toBe("module_update_failed");
    const id = /rolled back to ([0-9a-f-]{36})/.exec(run.outcome.error.message)?.[1];
    expect(id).toBeDefined();
    // Named from Odoo's own lines (the last "Loading module" before the failure), with Odoo's exception.
    expect(run.logs.map((l) => l.message)).toContainEqual("Module berth_sale: failed");
    expect(run.outcome.error.message).toMatch(/^module berth_sale failed \(exit code 255\)/);
    expect(run.outcome.error.message).toMatch(/FAIL_UPGRADE makes module berth_sale fail/);
    expect([...seen]).toEqual(["v3"]);

    expect(await databaseChecksum()).toBe(before.db);
    expect(fileStoreChecksum()).toBe(before.files);
    expect(await psql("SELECT to_regclass('public.berth_sale_new') IS NULL")).toBe("t");
    const after = await rowsOf(await erpPort());
    expect(after.addons_version).toBe("v3");
    expect(after.rows).toEqual(before.rows.rows);
    expect(await moduleNamed("berth_sale")).toMatchObject({ state: "installed", latest_version: "17.0.1.1" });
    expect(readFileSync(join(layout.addonsDir, "VERSION"), "utf8").trim()).toBe("v3");
    // The snapshot became the live database (consumed); nothing of the rollback is left behind.
    const dbs = (await psql("SELECT datname FROM pg_database ORDER BY 1", "postgres")).split("\n");
    expect(dbs).not.toContain(`odoo_predeploy_${String(id).replace(/-/g, "")}`);
    expect(dbs.filter((d) => d.startsWith("odoo_predeploy_"))).toHaveLength(2);
    expect(readdirSync(layout.backupsDir)).toHaveLength(2);
    expect(dbs.filter((d) => /_(restore|previous)_/.test(d))).toEqual([]);
    expect(readdirSync(layout.dir).filter((e) => /^data-|restore-state/.test(e))).toEqual([]);
    expect((await h.docker.listContainers({ label: [`berth.environment_id=${env}`] })).map((c) => c.name).sort()).toEqual(
      [layout.dbContainer, layout.erpContainer].sort(),
    );
  }, 240_000);

  it("keeps the last three pre-deploy snapshots (databases and folders)", async () => {
    const v5 = await repo.commit("v5", { "berth_sale/FAIL_UPGRADE": null, "berth_sale/berth_upgrade.sql": null });
    let last: Record<string, unknown> = {};
    for (let i = 0; i < 2; i++) last = resultOf(await deploy(v5, { modules: { upgrade: "all" } }));
    const backups = last.backups as { backup_id: string; created_at: string }[];
    expect(backups).toHaveLength(3);
    expect(backups[0]?.backup_id).toBe(last.snapshot_id);
    const dbs = (await psql("SELECT datname FROM pg_database WHERE datname LIKE 'odoo_predeploy_%' ORDER BY 1", "postgres")).split("\n");
    expect(dbs.sort()).toEqual(backups.map((b) => `odoo_predeploy_${b.backup_id.replace(/-/g, "")}`).sort());
    expect(readdirSync(layout.backupsDir).sort()).toEqual(backups.map((b) => b.backup_id).sort());
    expect(await moduleNamed("berth_sale")).toMatchObject({ state: "installed", latest_version: "17.0.1.2" });
  }, 300_000);

  it("an ERP that is not healthy after an upgrade is rolled back too: the previous container, code and database serve again", async () => {
    const before = { db: await databaseChecksum(), files: fileStoreChecksum() };
    // The upgrade itself succeeds; the new release then does not serve within the health
    // check's 8 s (a broken registry cannot stand for it: Odoo's own -u fails on one first).
    const v6 = await repo.commit("v6", { "berth_sale/__manifest__.py": manifest("1.3") });
    const run = await deploy(v6, { env: { BERTH_START_DELAY: "10" } });
    expect(run.outcome.ok).toBe(false);
    if (run.outcome.ok) return;
    expect(run.outcome.error.code).toBe("health_check_failed");
    expect(run.outcome.error.message).toMatch(/rolled back to [0-9a-f-]{36}/);
    expect(run.logs.some((l) => l.step === "starting_container" && /Module berth_sale: upgraded 17.0.1.2 -> 17.0.1.3/.test(l.message))).toBe(true);
    expect(await databaseChecksum()).toBe(before.db);
    expect(fileStoreChecksum()).toBe(before.files);
    expect((await rowsOf(await erpPort())).addons_version).toBe("v5");
    expect(await moduleNamed("berth_sale")).toMatchObject({ latest_version: "17.0.1.2" });
    expect((await h.docker.listContainers({ label: [`berth.environment_id=${env}`, "berth.role=erp"] })).map((c) => c.state)).toEqual(["running"]);
  }, 240_000);
  it("accepts no write while modules are upgraded, so a rollback loses no acknowledged write", async () => {
    const v7 = await repo.commit("v7", {
      "berth_sale/__manifest__.py": manifest("1.4"),
      "berth_sale/berth_upgrade.sql": "SELECT pg_sleep(3); DELETE FROM berth_probe;",
      "berth_sale/FAIL_UPGRADE": "",
    });
    // A user keeps saving during the deploy: every write the ERP acknowledged must survive it.
    const acknowledged: string[] = [];
    let writing = true;
    let n = 0;
    const writer = (async () => {
      while (writing) {
        const note = `written during the deploy ${String(n++)}`;
        try {
          const response = await fetch(`http://127.0.0.1:${String(await erpPort())}/berth/add?note=${encodeURIComponent(note)}`, {
            signal: AbortSignal.timeout(5_000),
          });
          if (response.status === 201) acknowledged.push(note);
        } catch {
          // Stopped: the write was refused, not acknowledged.
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const run = await deploy(v7);
    writing = false;
    await writer;
    expect(run.outcome.ok).toBe(false);
    if (run.outcome.ok) return;
    expect(run.outcome.error.code).toBe("module_update_failed");
    expect(run.logs.some((l) => /stopped until the upgrade's outcome/.test(l.message))).toBe(true);
    expect(acknowledged.length).toBeGreaterThan(0);
    const notes = new Set((await rowsOf(await erpPort())).rows.map((r) => r.note));
    expect(acknowledged.filter((note) => !notes.has(note))).toEqual([]);
  }, 240_000);
});
