// The module plan: Odoo.sh's rule (new modules only when listed), "changed" by version or
// content hash, "all", a list; the command line; what a run did to each module.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { adaptVersion, erpCommand, manifestValue, moduleLog, outcomes, planModules, sameVersion, scanAddons, seriesOf, type DbModule } from "./erp-modules.ts";

const db = (rows: [string, string, string | null][]): DbModule[] => rows.map(([name, state, latest_version]) => ({ name, state, latest_version }));

describe("versions and manifests", () => {
  it("adapts versions to the series as Odoo does", () => {
    expect(adaptVersion("17.0", "1.2")).toBe("17.0.1.2");
    expect(adaptVersion("17.0", "17.0.1.2")).toBe("17.0.1.2");
    // odoo/modules/module.py 16.0/17.0: a version equal to the series is prefixed as well.
    expect(adaptVersion("17.0", "17.0")).toBe("17.0.17.0");
    expect(adaptVersion("16.0", "16.0")).toBe("16.0.16.0");
    // 18.0 and 19.0 leave a version starting with the series alone.
    expect(adaptVersion("18.0", "18.0")).toBe("18.0");
    expect(adaptVersion("18.0", "1.2")).toBe("18.0.1.2");
    expect(adaptVersion("19.0", "1.2.3.4")).toBe("1.2.3.4");
    // Compared as Odoo records them: one leading series is no difference, anything else is.
    expect(sameVersion("17.0", "17.0.17.0", adaptVersion("17.0", "17.0"))).toBe(true);
    expect(sameVersion("17.0", "17.0.17.0", "17.0")).toBe(true);
    expect(sameVersion("17.0", "17.0.1.2", "1.2")).toBe(true);
    expect(sameVersion("17.0", "17.0.1.2", "17.0.1.3")).toBe(false);
    expect(sameVersion("17.0", null, "17.0.1.0")).toBe(false);
    expect(seriesOf("17.0+e-20250703")).toBe("17.0");
    expect(seriesOf("saas~17.4")).toBe("17.4");
    expect(manifestValue(`{'name': "X", 'version': '2.5',}`, "version")).toBe("2.5");
    expect(manifestValue(`{"version": "3.0"}`, "version")).toBe("3.0");
  });

  it("scans module folders with their version and a content hash that follows their files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "berth-addons-"));
    mkdirSync(join(dir, "a"));
    writeFileSync(join(dir, "a", "__manifest__.py"), "{'version': '1.0'}");
    mkdirSync(join(dir, "not_a_module"));
    writeFileSync(join(dir, "VERSION"), "v1");
    const first = await scanAddons(dir, "17.0");
    expect(first.map((m) => [m.name, m.version, m.installable])).toEqual([["a", "17.0.1.0", true]]);
    writeFileSync(join(dir, "a", "models.py"), "x = 1");
    const second = await scanAddons(dir, "17.0");
    expect(second[0]?.hash).not.toBe(first[0]?.hash);
  });
});

describe("planModules", () => {
  const addons = [
    { name: "a", version: "17.0.1.1", installable: true, hash: "h-a" },
    { name: "b", version: "17.0.1.0", installable: true, hash: "h-b2" },
    { name: "c", version: "17.0.1.0", installable: true, hash: "h-c" },
  ];
  const rows = db([
    ["base", "installed", "17.0.1.3"],
    ["a", "installed", "17.0.1.0"],
    ["b", "installed", "17.0.1.0"],
    ["c", "uninstalled", null],
  ]);

  it("changed: a new version, or files changed since the last deploy; never installs an unlisted module", () => {
    const plan = planModules({ upgrade: "changed" }, addons, rows, { modules: { b: { hash: "h-b1", version: "17.0.1.0" } } }, "17.0");
    expect(plan.upgrade).toEqual(["a", "b"]);
    expect(plan.install).toEqual([]);
    expect(plan.reasons).toMatchObject({ a: "version 17.0.1.0 -> 17.0.1.1", b: "files changed since its last deploy" });
    // Without a recorded hash only the version counts.
    expect(planModules({ upgrade: "changed" }, addons, rows, { modules: {} }, "17.0").upgrade).toEqual(["a"]);
  });

  it("all and a list", () => {
    expect(planModules({ upgrade: "all" }, addons, rows, { modules: {} }, "17.0")).toMatchObject({ upgrade: ["all"], install: [] });
    expect(planModules({ upgrade: ["b", "c"] }, addons, rows, { modules: {} }, "17.0")).toMatchObject({ upgrade: ["b"], install: ["c"] });
    expect(() => planModules({ upgrade: ["nope"] }, addons, rows, { modules: {} }, "17.0")).toThrow(/nope/);
  });
});

describe("the command line and the outcome", () => {
  it("always stops after init", () => {
    expect(erpCommand({ series: "17.0", init: ["base"], withoutDemo: true, language: "fr_FR" })).toEqual([
      "odoo",
      "--stop-after-init",
      "--no-http",
      "-i",
      "base",
      "--without-demo=all",
      "--load-language=fr_FR",
    ]);
    expect(erpCommand({ series: "17.0", init: [], update: ["a", "b"], withoutDemo: false })).toEqual(["odoo", "--stop-after-init", "--no-http", "-u", "a,b"]);
  });

  it("gives each version its own demo flags (19.0: off by default, --with-demo)", () => {
    for (const series of ["16.0", "17.0", "18.0"]) {
      expect(erpCommand({ series, init: ["base"], withoutDemo: true })).toContain("--without-demo=all");
      expect(erpCommand({ series, init: ["base"], withoutDemo: false }).filter((a) => a.includes("demo"))).toEqual([]);
    }
    expect(erpCommand({ series: "19.0", init: ["base"], withoutDemo: true }).filter((a) => a.includes("demo"))).toEqual([]);
    expect(erpCommand({ series: "19.0", init: ["base"], withoutDemo: false })).toContain("--with-demo");
  });

  it("records installed, upgraded and failed modules", () => {
    const before = db([
      ["a", "installed", "17.0.1.0"],
      ["b", "installed", "17.0.1.0"],
      ["c", "uninstalled", null],
    ]);
    const after = db([
      ["a", "installed", "17.0.1.1"],
      ["b", "installed", "17.0.1.0"],
      ["c", "installed", "17.0.1.0"],
    ]);
    const log = moduleLog();
    for (const line of [
      "2026-11-28 10:00:00,001 1 INFO odoo odoo.modules.loading: Loading module a (2/3)",
      "2026-11-28 10:00:00,002 1 INFO odoo odoo.modules.loading: Loading module b (3/3)",
      "2026-11-28 10:00:00,003 1 WARNING odoo odoo.modules.loading: Transient module states were reset",
      "2026-11-28 10:00:00,004 1 CRITICAL odoo odoo.service.server: Failed to initialize database `odoo`.",
      "Traceback (most recent call last):",
      '  File "/usr/lib/python3/dist-packages/odoo/service/server.py", line 1301, in preload_registries',
      "psycopg2.errors.UndefinedColumn: column \"x\" does not exist",
    ]) log.line(line);
    expect(log.failedModule()).toBe("b");
    expect(log.errorLines()).toEqual([
      "2026-11-28 10:00:00,004 1 CRITICAL odoo odoo.service.server: Failed to initialize database `odoo`.",
      'psycopg2.errors.UndefinedColumn: column "x" does not exist',
    ]);
    expect(outcomes({ upgrade: ["a", "b"], install: ["c"], reasons: {} }, before, after, { ok: false, failed: "b", loaded: log.loaded() })).toEqual([
      { name: "a", action: "upgraded", from_version: "17.0.1.0", to_version: "17.0.1.1" },
      { name: "b", action: "failed", from_version: "17.0.1.0", to_version: null },
      { name: "c", action: "installed", from_version: null, to_version: "17.0.1.0" },
    ]);
  });

  it("a failed run whose module states were reset upgraded nothing it did not reach, whatever the log", () => {
    // Odoo resets `to upgrade` to `installed` with the OLD latest_version: the table looks as before.
    const rows = db([
      ["a", "installed", "17.0.1.0"],
      ["b", "installed", "17.0.1.0"],
    ]);
    const log = moduleLog();
    log.line("2026-11-28 10:00:00,001 1 CRITICAL odoo odoo.modules.module: Couldn't load module a");
    expect(log.failedModule()).toBe("a");
    expect(outcomes({ upgrade: ["a", "b"], install: [], reasons: {} }, rows, rows, { ok: false, failed: log.failedModule(), loaded: log.loaded() }).map((m) => m.action)).toEqual([
      "failed",
      "failed",
    ]);
  });

  it("a run that exits 0 without bringing the checkout's version did not upgrade", () => {
    const rows = db([["a", "installed", "17.0.1.0"]]);
    const addons = [{ name: "a", version: "17.0.1.1", installable: true, hash: "h" }];
    expect(outcomes({ upgrade: ["a"], install: [], reasons: {} }, rows, rows, { ok: true, failed: null, loaded: [] }, { series: "17.0", addons })[0]?.action).toBe("failed");
    const upgraded = db([["a", "installed", "17.0.1.1"]]);
    expect(outcomes({ upgrade: ["a"], install: [], reasons: {} }, rows, upgraded, { ok: true, failed: null, loaded: [] }, { series: "17.0", addons })[0]).toMatchObject({ action: "upgraded", to_version: "17.0.1.1" });
  });

  it("a deploy with nothing changed plans nothing: manifest versions compare as Odoo records them", () => {
    // A manifest whose version is the series itself: Odoo records "17.0.17.0".
    const addons = [{ name: "a", version: adaptVersion("17.0", "17.0"), installable: true, hash: "h" }];
    const plan = planModules({ upgrade: "changed" }, addons, db([["a", "installed", "17.0.17.0"]]), { modules: { a: { hash: "h", version: "17.0.17.0" } } }, "17.0");
    expect(plan).toMatchObject({ upgrade: [], install: [] });
  });
});
