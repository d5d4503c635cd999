// Modules on deploy: which to install and which to upgrade, run in a one-off container of
// the ERP image with --stop-after-init BEFORE the new ERP container replaces the old one,
// and what happened to each. A new database is initialised the same way (-i base).
//
// The rule (as Odoo.sh's): a module of the add-ons checkout that is not installed is only
// installed when the deploy lists it. "changed" upgrades the installed modules of the
// checkout whose manifest version differs from ir_module_module.latest_version, or whose
// files differ from what they were at their last successful deploy (a content hash kept in
// <env dir>/modules-state.json); "all" upgrades everything (-u all); a list upgrades those
// installed and installs those not.
import { createHash } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import type { ModuleUpgrade } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import { ERP_DB_NAME, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { psql } from "../environment/database-swap.ts";
import { CommandError } from "../runner/handler-types.ts";

const MODULE_NAME = /^[a-z0-9_]{1,64}$/;
const STATE_FILE = "modules-state.json";

export interface AddonModule {
  name: string;
  /** The manifest's version as the ERP records it (adapt_version). */
  version: string;
  installable: boolean;
  /** sha256 over the module folder's paths and contents. */
  hash: string;
}

export interface DbModule {
  name: string;
  state: string;
  latest_version: string | null;
}

export interface ModulePlan {
  install: string[];
  /** ["all"] for -u all. */
  upgrade: string[];
  /** Why each module is in the plan, for the step log. */
  reasons: Record<string, string>;
}

export interface ModuleOutcome {
  name: string;
  action: "installed" | "upgraded" | "failed";
  from_version: string | null;
  to_version: string | null;
}

/** Odoo's adapt_version: a version not starting with the series gets it as prefix. */
export function adaptVersion(series: string, version: string): string {
  return version === series || version.startsWith(`${series}.`) ? version : `${series}.${version}`;
}

/** The series ("17.0") of an ERP version such as "17.0" or "17.0+e-20250703". */
export function seriesOf(erpVersion: string): string {
  const match = /^(\d+)\.(\d+)/.exec(erpVersion) ?? /^saas~(\d+)\.(\d+)/.exec(erpVersion);
  return match === null ? erpVersion : `${match[1]}.${match[2]}`;
}

/** A manifest's string value of `key` ('version': '1.2' or "1.2"). */
export function manifestValue(text: string, key: string): string | null {
  const match = new RegExp(`["']${key}["']\\s*:\\s*(?:"([^"]*)"|'([^']*)')`).exec(text);
  return match === null ? null : (match[1] ?? match[2] ?? null);
}

/** The module folders (with a __manifest__.py) at the top of the add-ons checkout. */
export async function scanAddons(addonsDir: string, series: string): Promise<AddonModule[]> {
  const entries = await readdir(addonsDir, { withFileTypes: true }).catch(() => []);
  const modules: AddonModule[] = [];
  for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
    if (!entry.isDirectory() || !MODULE_NAME.test(entry.name)) continue;
    const dir = join(addonsDir, entry.name);
    const manifest = await readFile(join(dir, "__manifest__.py"), "utf8").catch(() => null);
    if (manifest === null) continue;
    modules.push({
      name: entry.name,
      version: adaptVersion(series, manifestValue(manifest, "version") ?? "1.0"),
      installable: !/["']installable["']\s*:\s*False/.test(manifest),
      hash: await hashTree(dir),
    });
  }
  return modules;
}

async function hashTree(root: string): Promise<string> {
  const hash = createHash("sha256");
  const walk = async (dir: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name === "__pycache__") continue;
        await walk(path);
      } else if (entry.isFile()) {
        hash.update(`${relative(root, path)}\0${(await stat(path)).size}\0`);
        hash.update(await readFile(path));
      }
    }
  };
  await walk(root);
  return hash.digest("hex");
}

/** null when the database does not exist or was never initialised (base not installed). */
export async function readDbModules(docker: DockerClient, dbContainerId: string): Promise<DbModule[] | null> {
  const exists = await psql(docker, dbContainerId, `SELECT 1 FROM pg_database WHERE datname = '${ERP_DB_NAME}'`);
  if (exists.length === 0) return null;
  const table = await psql(docker, dbContainerId, "SELECT to_regclass('public.ir_module_module') IS NOT NULL", { database: ERP_DB_NAME });
  if (table[0] !== "t") return null;
  const rows = await psql(
    docker,
    dbContainerId,
    "SELECT json_build_object('name', name, 'state', state, 'latest_version', latest_version)::text FROM ir_module_module ORDER BY name",
    { database: ERP_DB_NAME },
  );
  const modules = rows.map((line) => JSON.parse(line) as DbModule);
  return modules.some((m) => m.name === "base" && m.state === "installed") ? modules : null;
}

export interface ModuleState {
  /** Per module: its content hash and version at the last successful deploy. */
  modules: Record<string, { hash: string; version: string }>;
}

export async function readModuleState(layout: EnvironmentLayout): Promise<ModuleState> {
  try {
    const parsed = JSON.parse(await readFile(join(layout.dir, STATE_FILE), "utf8")) as Partial<ModuleState>;
    return { modules: parsed.modules ?? {} };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { modules: {} };
    throw error;
  }
}

/** After a successful deploy: the hash of every installed module of the checkout. */
export function writeModuleState(layout: EnvironmentLayout, addons: AddonModule[], db: DbModule[]): void {
  const installed = new Set(db.filter((m) => m.state === "installed").map((m) => m.name));
  const modules: ModuleState["modules"] = {};
  for (const m of addons) if (installed.has(m.name)) modules[m.name] = { hash: m.hash, version: m.version };
  writeFileAtomic(join(layout.dir, STATE_FILE), `${JSON.stringify({ modules }, null, 2)}\n`, SECRET_FILE_MODE);
}

export function planModules(request: ModuleUpgrade, addons: AddonModule[], db: DbModule[], state: ModuleState): ModulePlan {
  const inDb = new Map(db.map((m) => [m.name, m]));
  const inAddons = new Map(addons.map((m) => [m.name, m]));
  const plan: ModulePlan = { install: [], upgrade: [], reasons: {} };
  if (request.upgrade === "all") {
    plan.upgrade = ["all"];
    plan.reasons.all = "every installed module (upgrade: all)";
    return plan;
  }
  if (Array.isArray(request.upgrade)) {
    const unknown: string[] = [];
    for (const name of [...new Set(request.upgrade)]) {
      const row = inDb.get(name);
      const addon = inAddons.get(name);
      if (row?.state === "installed") {
        plan.upgrade.push(name);
        plan.reasons[name] = "listed";
      } else if (addon !== undefined && addon.installable) {
        plan.install.push(name);
        plan.reasons[name] = "listed, not installed yet";
      } else if (row !== undefined && row.state !== "uninstallable" && name !== "base") {
        // A module of the image (standard add-ons) the database knows.
        plan.install.push(name);
        plan.reasons[name] = "listed, not installed yet";
      } else unknown.push(name);
    }
    if (unknown.length > 0) {
      throw new CommandError(
        "unknown_module",
        `module(s) ${unknown.join(", ")} are neither installed nor installable from the add-ons checkout: nothing was changed`,
      );
    }
    return plan;
  }
  for (const addon of addons) {
    const row = inDb.get(addon.name);
    if (row?.state !== "installed") continue;
    const recorded = state.modules[addon.name];
    if (row.latest_version !== addon.version) {
      plan.upgrade.push(addon.name);
      plan.reasons[addon.name] = `version ${row.latest_version ?? "none"} -> ${addon.version}`;
    } else if (recorded !== undefined && recorded.hash !== addon.hash) {
      plan.upgrade.push(addon.name);
      plan.reasons[addon.name] = "files changed since its last deploy";
    }
  }
  return plan;
}

export function planIsEmpty(plan: ModulePlan): boolean {
  return plan.install.length === 0 && plan.upgrade.length === 0;
}

/** The ERP's command line for a plan (or a first start), always with --stop-after-init. */
export function erpCommand(options: { init?: string[]; update?: string[]; withoutDemo: boolean; language?: string }): string[] {
  const cmd = ["odoo", "--stop-after-init", "--no-http"];
  if (options.init !== undefined && options.init.length > 0) cmd.push("-i", options.init.join(","));
  if (options.update !== undefined && options.update.length > 0) cmd.push("-u", options.update.join(","));
  if (options.withoutDemo) cmd.push("--without-demo=all");
  if (options.language !== undefined) cmd.push(`--load-language=${options.language}`);
  return cmd;
}

/** The module a failed run names in its log ("Failed to upgrade module x", "Failed to install module x"). */
export function failedModuleOf(lines: string[]): string | null {
  for (const line of [...lines].reverse()) {
    const match = /Failed to (?:upgrade|install|load) module (\w+)/.exec(line) ?? /Exception: module (\w+):/.exec(line);
    if (match !== null) return match[1] ?? null;
  }
  return null;
}

/** What a run did, from the module table before and after it. */
export function outcomes(plan: ModulePlan, before: DbModule[], after: DbModule[], failed: string | null): ModuleOutcome[] {
  const was = new Map(before.map((m) => [m.name, m]));
  const now = new Map(after.map((m) => [m.name, m]));
  const names = plan.upgrade.includes("all")
    ? before.filter((m) => m.state === "installed").map((m) => m.name)
    : [...plan.upgrade, ...plan.install];
  const result: ModuleOutcome[] = [];
  for (const name of names) {
    const b = was.get(name);
    const a = now.get(name);
    const installedNow = a?.state === "installed";
    const installedBefore = b?.state === "installed";
    if (name === failed || !installedNow) {
      result.push({ name, action: "failed", from_version: b?.latest_version ?? null, to_version: null });
    } else {
      result.push({
        name,
        action: installedBefore ? "upgraded" : "installed",
        from_version: installedBefore ? (b?.latest_version ?? null) : null,
        to_version: a?.latest_version ?? null,
      });
    }
  }
  return result;
}
