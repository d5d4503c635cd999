// Inside step starting_container, before the switch: the modules to install or upgrade on an
// existing (or just initialised) database, computed, then run in a one-off container of the
// new image (--stop-after-init), after a pre-deploy snapshot when the database had data to
// lose. A failed run rolls back to the snapshot (rollback-policy.ts). When the deploy asks for
// tests, the same run runs them (tests.ts, module-tests.ts).
import { environmentLabels } from "../../../docker/labels.ts";
import type { RunResult } from "../../../docker/workloads.ts";
import { DEFAULT_PRE_DEPLOY_RETENTION, pruneSnapshots, takeSnapshot, type PreDeploySnapshot } from "../../environment/pre-deploy-snapshot.ts";
import { CommandError } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import { withoutDemo, type DeployContext } from "../deploy-context.ts";
import type { ErpSizing } from "../erp-config.ts";
import {
  erpCommand,
  moduleLog,
  outcomes,
  planIsEmpty,
  planModules,
  readDbModules,
  readModuleState,
  seriesOf,
  type AddonModule,
  type DbModule,
  type ModuleLog,
  type ModuleOutcome,
} from "../erp-modules.ts";
import { runErpOnce } from "../erp-run.ts";
import { moduleTestLog, testOptions, type TestsResult } from "../module-tests.ts";
import type { PreviousErp } from "../previous-erp.ts";
import { afterModuleFailure, type DeployProgress } from "../rollback-policy.ts";
import { judgeTests, planTests } from "./tests.ts";

/** A one-off container of the new image, with the new code and configuration, output into the step log. */
export function runErp(c: DeployContext, sizing: ErpSizing, step: StepScope, cmd: string[], deadlineMs: number, what: string, watch?: Pick<ModuleLog, "line">): Promise<RunResult> {
  const { params, layout } = c;
  return runErpOnce(
    c.docker,
    {
      layout,
      image: params.image,
      cmd,
      labels: environmentLabels(layout.environmentId, "erp-run", { ...c.extraLabels, "berth.deployment_id": params.deployment_id }),
      env: params.env,
      nanoCpus: sizing.nano_cpus,
      memoryBytes: sizing.memory_bytes,
      what,
    },
    { deadlineMs, signal: step.signal, log: step.log, ...(watch ? { watch: (line: string) => watch.line(line) } : {}) },
  );
}

export interface ModuleRun {
  modules: ModuleOutcome[];
  snapshot: PreDeploySnapshot | null;
  /** The database's modules once the run (if any) is done, null when they could not be read: the ERP's start changes none. */
  modulesAfter: DbModule[] | null;
  /** The tests the run ran (null: none asked for, or no module to test). */
  tests: TestsResult | null;
}

export async function runModules(
  c: DeployContext,
  input: {
    sizing: ErpSizing;
    dbContainerId: string;
    addons: AddonModule[];
    before: DbModule[];
    /** The project repository's modules (a development build installs those not installed). */
    projectModules: readonly string[];
    /** A snapshot would keep nothing (a database this deploy initialised or restored): a failure swaps back. */
    snapshotWorthless: boolean;
    previous: PreviousErp;
  },
  progress: DeployProgress,
  step: StepScope,
): Promise<ModuleRun> {
  const { docker, params, layout, deps, timing } = c;
  const { dbContainerId, addons, before } = input;
  const series = seriesOf(params.erp_version);
  const request = params.modules ?? { upgrade: "changed" as const };
  const planned = planModules(request, addons, before, await readModuleState(layout), series);
  const { plan, tested } = params.tests ? planTests(params.tests, planned, input.projectModules, before) : { plan: planned, tested: [] };
  if (planIsEmpty(plan)) {
    step.log("info", `Modules: nothing to install or upgrade${params.tests ? " (no tests to run)" : ""}`);
    return { modules: [], snapshot: null, modulesAfter: before, tests: null };
  }
  for (const [name, reason] of Object.entries(plan.reasons)) step.log("info", `Module ${name}: ${plan.install.includes(name) ? "install" : "upgrade"} (${reason})`);
  let snapshot: PreDeploySnapshot | null = null;
  if (!input.snapshotWorthless && deps.preDeploy?.snapshots !== false) {
    const modules = Object.fromEntries(before.filter((m) => m.state === "installed").map((m) => [m.name, m.latest_version]));
    snapshot = await takeSnapshot(docker, dbContainerId, layout, {
      deploymentId: params.deployment_id,
      now: deps.clock.now(),
      modules,
      deadlineMs: timing.dataTransferMs,
      log: step.log,
      hooks: { stopErp: input.previous.stopForSnapshot(step.log) },
    });
    progress.snapshot = snapshot;
    await pruneSnapshots(docker, dbContainerId, layout, deps.preDeploy?.retention ?? DEFAULT_PRE_DEPLOY_RETENTION, step.log);
  }
  const cmd = [...erpCommand({ series, init: plan.install, update: plan.upgrade, withoutDemo: withoutDemo(params) }), ...testOptions(tested)];
  if (tested.length > 0) step.log("info", `Tests of ${tested.join(", ")} run with the install (${testOptions(tested).join(" ")})`);
  progress.modulesRan = true;
  const odooLog = moduleLog();
  const testLog = moduleTestLog();
  const run = await runErp(c, input.sizing, step, cmd, timing.moduleUpdateTimeoutMs, "modules", { line: (text) => (odooLog.line(text), testLog.line(text)) });
  // Odoo exits 1 once every module is loaded when a test did not pass (preload_registries'
  // rc += 1): its test report says so; any other exit is the modules' failure.
  const ok = run.exitCode === 0 || (tested.length > 0 && run.exitCode === 1 && testLog.reported());
  const tests = tested.length > 0 && testLog.reported() ? testLog.result() : null;
  const read = await readDbModules(docker, dbContainerId);
  const failed = ok ? null : odooLog.failedModule();
  const modules = outcomes(plan, before, read ?? [], { ok, failed, loaded: odooLog.loaded() }, { series, addons });
  for (const m of modules) {
    step.log(m.action === "failed" ? "error" : "info", `Module ${m.name}: ${m.action}${m.to_version ? ` ${m.from_version ?? ""}${m.from_version ? " -> " : ""}${m.to_version}` : ""}`, { module: m });
  }
  if (!ok) {
    const why = run.killed ? `not done within ${timing.moduleUpdateTimeoutMs / 60_000} min` : `exit code ${run.exitCode}`;
    // Odoo's own error lines (the traceback's exception included), else the last lines.
    const errors = odooLog.errorLines();
    const tail = (errors.length > 0 ? errors : run.tail.slice(-15)).join("\n");
    const decision = afterModuleFailure({ snapshot, failed, why, tail });
    if (decision.action === "rollback") {
      step.log("error", decision.log);
      await input.previous.rollback(step, decision.snapshot, null);
    }
    throw new CommandError(decision.failure.code, decision.failure.message);
  }
  const refused = tests !== null && params.tests ? judgeTests(params.tests, tests, step) : null;
  if (refused !== null) {
    // Before the switch: the database goes back to the snapshot and the previous ERP serves again.
    if (snapshot === null) throw refused;
    step.log("error", `Tests failed: rolling code, configuration, database and file store back to ${snapshot.backup_id}`);
    await input.previous.rollback(step, snapshot, null);
    throw new CommandError(refused.code, `${refused.message}; rolled back to ${snapshot.backup_id}`, refused.result);
  }
  return { modules, snapshot, modulesAfter: read, tests };
}
