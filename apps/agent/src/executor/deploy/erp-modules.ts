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
import { psql } from "../environment/psql.ts";
import { CommandError } from "../runner/handler-types.ts";
import { isOdooError } from "./erp-run.ts";

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

/**
 * Odoo's adapt_version (odoo/modules/module.py), as the version Odoo records in
 * ir_module_module.latest_version. 16.0 and 17.0 prefix the series unless the version already
 * starts with `<series>.`, and also when it equals the series ("17.0" becomes "17.0.17.0");
 * 18.0 and 19.0 prefix a version that does not start with the series (19.0: of at most three
 * parts) and leave "<series>" as it is. Compare versions with sameVersion, never with ===.
 */
export function adaptVersion(series: string, version: string): string {
  if (majorOf(series) <= 17) return version !== series && version.startsWith(`${series}.`) ? version : `${series}.${version}`;
  if (version.startsWith(series)) return version;
  return majorOf(series) >= 19 && version.split(".").length > 3 ? version : `${series}.${version}`;
}

/**
 * Whether two versions of a module are the same as Odoo sees them: adapt_version only ever
 * puts `<series>.` in front, so both sides lose one leading `<series>.` and are compared. A
 * manifest's '17.0' and the '17.0.17.0' Odoo recorded for it are the same; any rule that
 * compared them as written saw a change on every deploy (a snapshot and an upgrade each time).
 */
export function sameVersion(series: string, a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  const bare = (v: string) => (v.startsWith(`${series}.`) ? v.slice(series.length + 1) : v);
  return bare(a) === bare(b);
}

/** The major version of a series ("19.0" -> 19), NaN when it has none. */
export function majorOf(series: string): number {
  return Number.parseInt(series, 10);
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

export function planModules(request: ModuleUpgrade, addons: AddonModule[], db: DbModule[], state: ModuleState, series: string): ModulePlan {
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
    if (!sameVersion(series, row.latest_version, addon.version)) {
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
export function erpCommand(options: { series: string; init?: string[]; update?: string[]; withoutDemo: boolean; language?: string }): string[] {
  const cmd = ["odoo", "--stop-after-init", "--no-http"];
  if (options.init !== undefined && options.init.length > 0) cmd.push("-i", options.init.join(","));
  if (options.update !== undefined && options.update.length > 0) cmd.push("-u", options.update.join(","));
  cmd.push(...demoFlags(options.series, options.withoutDemo));
  if (options.language !== undefined) cmd.push(`--load-language=${options.language}`);
  return cmd;
}

/**
 * Demo data per version (odoo/tools/config.py): up to 18.0 it is on by default and
 * `--without-demo=<modules>` turns it off; 19.0 turns it off by default and adds
 * `--with-demo`, and its `--without-demo` takes no value (`=all` is refused). Odoo's option
 * parser exits on an option it does not know, so the wrong flag stops the ERP.
 */
export function demoFlags(series: string, withoutDemo: boolean): string[] {
  if (majorOf(series) >= 19) return withoutDemo ? [] : ["--with-demo"];
  return withoutDemo ? ["--without-demo=all"] : [];
}

/**
 * What Odoo's own lines say of a module run, read as they stream (a traceback can be longer
 * than any tail): odoo/modules/loading.py logs `Loading module <name> (<n>/<m>)` at INFO for
 * each module it installs or upgrades, in order, so the last one before a failure is the
 * module that failed; odoo/modules/module.py logs `Couldn't load module <name>` when its
 * Python cannot be imported; odoo/modules/loading.py `Transient module states were reset`
 * after a failure; odoo/service/server.py `Failed to initialize database `<db>`.`. Odoo
 * prints no "failed to upgrade module x" line.
 */
export function moduleLog() {
  const loaded: string[] = [];
  let unimportable: string | null = null;
  const errors: string[] = [];
  let inTraceback = false;
  return {
    line(text: string): void {
      const loading = /odoo\.modules\.loading: Loading module (\w+) \(\d+\/\d+\)/.exec(text);
      if (loading !== null) loaded.push(loading[1]!);
      const couldNot = /Couldn't load module (\w+)/.exec(text);
      if (couldNot !== null) unimportable ??= couldNot[1]!;
      if (isOdooError(text)) errors.push(text);
      if (text.startsWith("Traceback (most recent call last):")) inTraceback = true;
      else if (inTraceback && text !== "" && !/^\s/.test(text)) {
        // The exception line that ends a traceback: what went wrong, in Odoo's words.
        errors.push(text);
        inTraceback = false;
      }
      if (errors.length > MAX_ERROR_LINES) errors.shift();
    },
    /** The modules Odoo started to install or upgrade, in order. */
    loaded: (): readonly string[] => loaded,
    /** The module a failed run names: one that could not be imported, else the last one loading. */
    failedModule: (): string | null => unimportable ?? loaded.at(-1) ?? null,
    /** Odoo's error lines (ERROR, CRITICAL, each traceback's exception), the last few. */
    errorLines: (): readonly string[] => errors,
  };
}
export type ModuleLog = ReturnType<typeof moduleLog>;
const MAX_ERROR_LINES = 12;

/**
 * What a run did, from the module table before and after it and Odoo's lines. After a failed
 * run Odoo resets the transient states (`to upgrade` back to `installed`, the OLD
 * latest_version kept), so an unchanged version means not upgraded, never "upgraded".
 */
export function outcomes(
  plan: ModulePlan,
  before: DbModule[],
  after: DbModule[],
  run: { ok: boolean; failed: string | null; loaded: readonly string[] },
  expectation: { series: string; addons: AddonModule[] } = { series: "", addons: [] },
): ModuleOutcome[] {
  const was = new Map(before.map((m) => [m.name, m]));
  const now = new Map(after.map((m) => [m.name, m]));
  const expected = new Map(expectation.addons.map((m) => [m.name, m.version]));
  const loaded = new Set(run.loaded);
  const names = plan.upgrade.includes("all")
    ? before.filter((m) => m.state === "installed").map((m) => m.name)
    : [...plan.upgrade, ...plan.install];
  const result: ModuleOutcome[] = [];
  for (const name of names) {
    const b = was.get(name);
    const a = now.get(name);
    const installedNow = a?.state === "installed";
    const installedBefore = b?.state === "installed";
    const changed = installedBefore ? a?.latest_version !== b?.latest_version : installedNow;
    const want = expected.get(name);
    let done: boolean;
    if (name === run.failed || !installedNow) done = false;
    // A run that succeeded must have brought the checkout's version.
    else if (run.ok) done = want === undefined || sameVersion(expectation.series, a?.latest_version ?? null, want);
    // A failed run: only what changed, or what Odoo went past before the failing module.
    else done = changed || loaded.has(name);
    if (!done) {
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
