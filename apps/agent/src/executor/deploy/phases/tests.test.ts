import { describe, expect, it } from "vitest";
import type { StepScope } from "../../runner/step-runner.ts";
import { judgeTests, planTests } from "./tests.ts";

const installed = (name: string) => ({ name, state: "installed", latest_version: "17.0.1.0" });
const plan = (install: string[], upgrade: string[]) => ({ install, upgrade, reasons: {} });
const DEV = { install_new_modules: true, require_passing: false };
const STAGING = { install_new_modules: false, require_passing: true };

describe("which modules a deploy with tests installs and tests", () => {
  it("a development build installs the repository's modules not installed yet and tests what it installs or upgrades", () => {
    const out = planTests(DEV, plan([], ["sale_x"]), ["new_one", "sale_x", "old_one"], [installed("base"), installed("sale_x"), installed("old_one")]);
    expect(out.plan.install).toEqual(["new_one"]);
    expect(out.plan.upgrade).toEqual(["sale_x"]);
    expect(out.plan.reasons.new_one).toMatch(/development build/);
    // An installed, unchanged module is neither upgraded nor tested.
    expect(out.tested).toEqual(["new_one", "sale_x"]);
  });

  it("staging installs nothing on its own; -u all tests the repository's installed modules", () => {
    expect(planTests(STAGING, plan([], []), ["new_one"], [installed("base")])).toEqual({ plan: plan([], []), tested: [] });
    expect(planTests(STAGING, plan([], ["all"]), ["a", "b"], [installed("base"), installed("a")]).tested).toEqual(["a"]);
  });
});

describe("what a test that did not pass does", () => {
  const failing = { run: 2, failed: 1, errors: 0, failures: [{ test: "T.test_b", module: "m", kind: "failure" as const, traceback: ["AssertionError: no"] }] };
  const scope = (logs: string[]) => ({ log: (_level: string, message: string) => logs.push(message) }) as unknown as StepScope;

  it("a development build serves anyway; a deploy that requires passing tests is refused with them", () => {
    const logs: string[] = [];
    expect(judgeTests(DEV, failing, scope(logs))).toBeNull();
    expect(logs).toContain("Test failed: m T.test_b: AssertionError: no");
    const refused = judgeTests(STAGING, failing, scope([]));
    expect(refused?.code).toBe("tests_failed");
    expect(refused?.result).toEqual({ tests: failing });
    expect(judgeTests(STAGING, { run: 2, failed: 0, errors: 0, failures: [] }, scope([]))).toBeNull();
  });
});
