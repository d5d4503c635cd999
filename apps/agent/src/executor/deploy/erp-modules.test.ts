// The module plan: Odoo.sh's rule (new modules only when listed), "changed" by version or
// content hash, "all", a list; the command line; what a run did to each module.
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { adaptVersion, erpCommand, failedModuleOf, manifestValue, outcomes, planModules, scanAddons, seriesOf, type DbModule } from "./erp-modules.ts";

const db = (rows: [string, string, string | null][]): DbModule[] => rows.map(([name, state, latest_version]) => ({ name, state, latest_version }));

describe("versions and manifests", () => {
  it("adapts versions to the series as Odoo does", () => {
    expect(adaptVersion("17.0", "1.2")).toBe("17.0.1.2");
    expect(adaptVersion("17.0", "17.0.1.2")).toBe("17.0.1.2");
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
    const plan = planModules({ upgrade: "changed" }, addons, rows, { modules: { b: { hash: "h-b1", version: "17.0.1.0" } } });
    expect(plan.upgrade).toEqual(["a", "b"]);
    expect(plan.install).toEqual([]);
    expect(plan.reasons).toMatchObject({ a: "version 17.0.1.0 -> 17.0.1.1", b: "files changed since its last deploy" });
    // Without a recorded hash only the version counts.
    expect(planModules({ upgrade: "changed" }, addons, rows, { modules: {} }).upgrade).toEqual(["a"]);
  });

  it("all and a list", () => {
    expect(planModules({ upgrade: "all" }, addons, rows, { modules: {} })).toMatchObject({ upgrade: ["all"], install: [] });
    expect(planModules({ upgrade: ["b", "c"] }, addons, rows, { modules: {} })).toMatchObject({ upgrade: ["b"], install: ["c"] });
    expect(() => planModules({ upgrade: ["nope"] }, addons, rows, { modules: {} })).toThrow(/nope/);
  });
});

describe("the command line and the outcome", () => {
  it("always stops after init", () => {
    expect(erpCommand({ init: ["base"], withoutDemo: true, language: "fr_FR" })).toEqual([
      "odoo",
      "--stop-after-init",
      "--no-http",
      "-i",
      "base",
      "--without-demo=all",
      "--load-language=fr_FR",
    ]);
    expect(erpCommand({ init: [], update: ["a", "b"], withoutDemo: false })).toEqual(["odoo", "--stop-after-init", "--no-http", "-u", "a,b"]);
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
    const failed = failedModuleOf(["2026-01-01 ERROR odoo odoo.modules.loading: Failed to upgrade module b: boom", "Traceback"]);
    expect(failed).toBe("b");
    expect(outcomes({ upgrade: ["a", "b"], install: ["c"], reasons: {} }, before, after, failed)).toEqual([
      { name: "a", action: "upgraded", from_version: "17.0.1.0", to_version: "17.0.1.1" },
      { name: "b", action: "failed", from_version: "17.0.1.0", to_version: null },
      { name: "c", action: "installed", from_version: null, to_version: "17.0.1.0" },
    ]);
  });
});
