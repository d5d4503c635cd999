// Inside the module run (modules.ts), when the deploy asks for tests (params.tests: a
// development build, or a staging environment that requires passing tests): which modules
// are installed and tested, and what a test that did not pass does. A development build
// installs the project repository's modules that are not installed yet (as Odoo.sh's
// development builds do) and serves whatever the tests say; a deploy that requires passing
// tests is refused, before the switch, with the database back as it was.
import type { DeployTests } from "@berth/protocol";
import { CommandError } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import type { DbModule, ModulePlan } from "../erp-modules.ts";
import { testsPassed, testsSummary, type TestsResult } from "../module-tests.ts";

/**
 * The plan with a development build's new installs (the project's installable modules not
 * installed yet), and the modules whose tests run: those the plan installs or upgrades
 * (with -u all, the project's installed modules).
 */
export function planTests(tests: DeployTests, plan: ModulePlan, projectModules: readonly string[], before: readonly DbModule[]): { plan: ModulePlan; tested: string[] } {
  const installed = new Set(before.filter((m) => m.state === "installed").map((m) => m.name));
  const next: ModulePlan = { install: [...plan.install], upgrade: [...plan.upgrade], reasons: { ...plan.reasons } };
  if (tests.install_new_modules) {
    for (const name of projectModules) {
      if (installed.has(name) || next.install.includes(name) || next.upgrade.includes(name)) continue;
      next.install.push(name);
      next.reasons[name] = "development build: a module of the repository not installed yet";
    }
  }
  const tested = next.upgrade.includes("all") ? projectModules.filter((m) => installed.has(m)) : [...next.install, ...next.upgrade];
  return { plan: next, tested: [...new Set(tested)].sort() };
}

/** The tests' result into the step log; the error that refuses the deploy when they must pass and did not (null: go on). */
export function judgeTests(tests: DeployTests, result: TestsResult, step: StepScope): CommandError | null {
  const passed = testsPassed(result);
  step.log(passed ? "info" : "warning", `Tests: ${testsSummary(result)}`, { tests: { run: result.run, failed: result.failed, errors: result.errors } });
  for (const f of result.failures) {
    step.log("warning", `Test ${f.kind === "failure" ? "failed" : "raised an error"}: ${f.module} ${f.test}: ${f.traceback.at(-1) ?? ""}`, { test: f });
  }
  if (passed) return null;
  if (!tests.require_passing) {
    step.log("info", "A development build serves even when tests fail");
    return null;
  }
  return new CommandError("tests_failed", `the modules' tests did not pass: ${testsSummary(result)}; this environment requires passing tests`, { tests: result });
}
