// The import rules of .dependency-cruiser.cjs (run by `npm run lint:deps`) each fail on a
// fixture tree that breaks them, and pass on one that keeps them.
import { execFile } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const fixtures = path.join(root, "test", "lint", "fixtures", "deps");

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

async function cruise(tree: "bad" | "good"): Promise<Violation[]> {
  const bin = path.join(root, "node_modules", ".bin", "depcruise");
  const args = ["apps", "packages", "--config", path.join(root, ".dependency-cruiser.cjs"), "--ts-config", path.join(root, "tsconfig.base.json"), "--output-type", "json"];
  // depcruise exits non-zero when it finds violations; its report is on stdout either way.
  const { stdout } = await promisify(execFile)(bin, args, { cwd: path.join(fixtures, tree), maxBuffer: 16 * 1024 * 1024 }).catch((err: { stdout: string }) => err);
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

describe("import rules", () => {
  it("each rule fails on the file that breaks it", async () => {
    const found = (await cruise("bad")).map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
    expect(found).toEqual(
      [
        "cli-stands-alone: apps/control-plane/src/cli/shop-command.ts -> apps/control-plane/src/modules/shop/shop.routes.ts",
        "apps-not-to-each-other: apps/agent/src/agent.ts -> apps/control-plane/src/modules/shop/shop.routes.ts",
        "modules-not-to-api-surfaces: apps/control-plane/src/modules/shop/shop.routes.ts -> apps/control-plane/src/public-api/guards.ts",
        "no-circular: apps/control-plane/src/modules/shop/a.ts -> apps/control-plane/src/modules/shop/b.ts",
        "not-to-unresolvable: apps/agent/src/lost.ts -> ./gone.ts",
        "packages-not-to-apps: packages/kit/src/index.ts -> apps/control-plane/src/modules/shop/a.ts",
        "production-not-to-tests: apps/agent/src/runner.ts -> apps/agent/src/runner.test-helpers.ts",
      ].sort(),
    );
  });

  it("a tree that keeps the rules passes", async () => {
    expect(await cruise("good")).toEqual([]);
  });
});
