// What an environment's stage asks of its deploys (issue 34, "development builds"): a
// development environment's deploy installs the project's modules with demo data and runs
// the tests of the modules it installs or upgrades, and serves whatever they say (as on
// Odoo.sh); a staging environment runs them only when require_passing_tests is set, and
// then refuses a commit whose tests fail; production never runs them. A staging environment
// set to refresh on push gets production's data (neutralised) before each pushed commit.
import type { DeployTests } from "@berth/protocol";

type Stage = "production" | "staging" | "development";

/** The deploy command's `tests` for an environment; undefined: no tests run. */
export function deployTestsOf(env: { stage: Stage; requirePassingTests: boolean }): DeployTests | undefined {
  if (env.stage === "development") return { install_new_modules: true, require_passing: false };
  if (env.stage === "staging" && env.requirePassingTests) return { install_new_modules: false, require_passing: true };
  return undefined;
}

/** A new database gets demo data by default in a development environment only (a deploy's init.without_demo overrides it). */
export function withoutDemoByDefault(stage: Stage): boolean {
  return stage !== "development";
}

/** The settings of what a stage asks of its builds, as the APIs name them (PATCH of an environment). */
export interface StageSettings {
  require_passing_tests?: boolean | undefined;
  refresh_on_push?: boolean | undefined;
}

/** Whether a push to the environment's branch refreshes it from production before its deploy (the setting applies while it is staging). */
export function refreshesOnPush(env: { stage: Stage; refreshOnPush: boolean }): boolean {
  return env.stage === "staging" && env.refreshOnPush;
}
