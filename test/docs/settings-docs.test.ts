// The settings reference (apps/control-plane/docs/settings.md) and .env.example are generated from the settings' declarations:
// this fails when either differs from what `npm run docs:settings` would write, and when the
// shipped code names a BERTH_* variable no declaration describes.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AGENT_SETTINGS } from "../../apps/agent/src/config/settings.ts";
import { CONTROL_PLANE_SETTINGS } from "../../apps/control-plane/src/config/settings.ts";
import { ENV_EXAMPLE, renderEnvExample, renderSettingsDoc, ROOT, SETTINGS_DOC } from "./settings-docs.ts";

const FIX = "run `npm run docs:settings` and commit apps/control-plane/docs/settings.md and .env.example";

describe("the settings docs", () => {
  it(`apps/control-plane/docs/settings.md is what the declarations say (else ${FIX})`, () => {
    expect(readFileSync(SETTINGS_DOC, "utf8"), FIX).toBe(renderSettingsDoc());
  });

  it(`.env.example is what the declarations say (else ${FIX})`, () => {
    expect(readFileSync(ENV_EXAMPLE, "utf8"), FIX).toBe(renderEnvExample());
  });

  it("lists every control plane setting in .env.example, secrets blank", () => {
    const example = renderEnvExample();
    for (const s of Object.values(CONTROL_PLANE_SETTINGS)) {
      expect(example).toMatch(new RegExp(`^# ${s.name}=${"secret" in s && s.secret ? "$" : ""}`, "m"));
    }
  });

  it("declares every BERTH_* variable the shipped code names", () => {
    const declared = new Set([...Object.values(CONTROL_PLANE_SETTINGS), ...Object.values(AGENT_SETTINGS)].flatMap((s) => [s.name, ...(s.oldNames ?? [])]));
    // Names that are not settings: a warning code, a lock id, a placeholder, prefixes in prose,
    // and the CLI's environment (documented by `berth --help` and docs/cli.md).
    const notSettings = new Set(["BERTH_SETTING_RENAMED", "BERTH_JOB_SLOTS", "BERTH_CONTROL_PLANE_URL", "BERTH_PROXY_", "BERTH_BACKUP_S3_", "BERTH_URL", "BERTH_API_KEY", "BERTH_TOKEN"]);
    const undeclared = new Set<string>();
    for (const file of sources([path.join(ROOT, "apps"), path.join(ROOT, "packages")])) {
      for (const [name] of readFileSync(file, "utf8").matchAll(/\bBERTH_[A-Z0-9_]+/g)) {
        if (!declared.has(name) && !notSettings.has(name)) undeclared.add(`${name} (${path.relative(ROOT, file)})`);
      }
    }
    expect([...undeclared]).toEqual([]);
  });
});

/** Shipped TypeScript: src folders, without tests and test helpers. */
function sources(dirs: string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string, inSrc: boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === "node_modules" || entry.name === "dist") continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full, inSrc || entry.name === "src");
      else if (inSrc && entry.name.endsWith(".ts") && !/\.test(-helpers)?\.ts$/.test(entry.name)) out.push(full);
    }
  };
  for (const dir of dirs) walk(dir, false);
  return out;
}
