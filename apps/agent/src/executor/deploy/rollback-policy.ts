// What a deploy does when it fails, decided from what it had done. The database is what is
// at stake: once modules ran on it after a pre-deploy snapshot, any failure (the module run
// itself, an unhealthy ERP, a cancel, a deadline, the switch, the proxy) brings code,
// configuration, database and file store back to the snapshot and the previous ERP serves
// again (previous-erp.ts). Before that, the failure is reported as it is, and the old ERP,
// if this deploy stopped it, serves again. A migration's restore undoes itself first
// (migration-restore.ts). The health check is otherwise non-fatal (spec 4.1 rule 7).
//
// The decisions are pure functions (rollback-policy.test.ts); failDeploy applies them.
import type { PreDeploySnapshot } from "../environment/pre-deploy-snapshot.ts";
import { findErpContainer } from "../environment/erp-container.ts";
import { CommandError, type CommandEmitter } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";
import type { DeployContext } from "./deploy-context.ts";
import type { MigrationRestore } from "./migration-restore.ts";
import type { PreviousErp } from "./previous-erp.ts";

/** How a failure is reported (command.result.error). */
export interface Failure {
  code: string;
  message: string;
}

/** What a deploy had done when it failed: what the failure has to undo. Filled in by the database phase. */
export interface DeployProgress {
  /** The previous ERP's handling and the migration's restore, once the database phase began. */
  previous: PreviousErp | null;
  migration: MigrationRestore | null;
  /** The ERP container that served before this deploy. */
  oldErpId: string | null;
  /** The pre-deploy snapshot, once taken. */
  snapshot: PreDeploySnapshot | null;
  /** Modules were run against the database: until the deploy succeeds, a failure rolls back. */
  modulesRan: boolean;
}

export function noProgress(): DeployProgress {
  return { previous: null, migration: null, oldErpId: null, snapshot: null, modulesRan: false };
}

export type Decision =
  /** The failure stands as it is; the old ERP this deploy stopped serves again unless a rollback already started it. */
  | { action: "report"; resumePrevious: boolean }
  /** Back to the snapshot, then this is reported. */
  | { action: "rollback"; snapshot: PreDeploySnapshot; log: string; failure: Failure };

/** Any failure of the deploy (a step's error, a cancel, a deadline), after a migration's restore undid itself. */
export function afterFailure(done: { snapshot: PreDeploySnapshot | null; modulesRan: boolean; rolledBack: boolean }, error: unknown): Decision {
  if (done.snapshot === null || !done.modulesRan || done.rolledBack) return { action: "report", resumePrevious: !done.rolledBack };
  const reason = error instanceof Error ? error.message : String(error);
  return {
    action: "rollback",
    snapshot: done.snapshot,
    log: `The deployment failed after its module upgrade: rolling back to ${done.snapshot.backup_id}`,
    failure: { code: error instanceof CommandError ? error.code : "deploy_failed", message: `${reason}; rolled back to ${done.snapshot.backup_id}` },
  };
}

/** The module run failed (`why`: its exit code or deadline; `tail`: Odoo's error lines). */
export function afterModuleFailure(
  run: { snapshot: PreDeploySnapshot | null; failed: string | null; why: string; tail: string },
): { action: "report"; failure: Failure } | { action: "rollback"; snapshot: PreDeploySnapshot; log: string; failure: Failure } {
  const what = run.failed ?? "install/upgrade";
  if (run.snapshot === null) return { action: "report", failure: { code: "module_update_failed", message: `module ${what} failed (${run.why}); last lines:\n${run.tail}` } };
  const id = run.snapshot.backup_id;
  return {
    action: "rollback",
    snapshot: run.snapshot,
    log: `Module ${what} failed (${run.why}): rolling code, configuration, database and file store back to ${id}`,
    failure: { code: "module_update_failed", message: `module ${what} failed (${run.why}): rolled back to ${id}; last lines:\n${run.tail}` },
  };
}

/** The health check's outcome: unhealthy fails only when replaced data is at stake (an upgrade, a restore over live data). */
export function afterHealthCheck(check: {
  healthy: boolean;
  snapshot: PreDeploySnapshot | null;
  /** A migration's restore replaced a live database. */
  replacesExisting: boolean;
}):
  | { action: "fail"; failure: Failure }
  | { action: "rollback"; snapshot: PreDeploySnapshot; log: string; failure: Failure }
  | { action: "keep"; removeParked: boolean; summary: string } {
  // The catch swaps the restore back.
  if (check.replacesExisting && !check.healthy) return { action: "fail", failure: { code: "restore_unhealthy", message: "the ERP was not healthy on the restored database" } };
  if (check.snapshot !== null && !check.healthy) {
    return {
      action: "rollback",
      snapshot: check.snapshot,
      log: "The ERP is not healthy after the module upgrade: rolling code, configuration, database and file store back",
      failure: { code: "health_check_failed", message: `the ERP was not healthy after the module upgrade: rolled back to ${check.snapshot.backup_id}` },
    };
  }
  // After an upgrade, the previous ERP is kept (parked) until the new one is healthy.
  return { action: "keep", removeParked: check.snapshot !== null, summary: check.healthy ? "ERP healthy" : "ERP not healthy (non-fatal)" };
}

/** After the deploy failed: undoes what the policy says; returns the error to fail the command with. */
export async function failDeploy({ docker, layout }: DeployContext, progress: DeployProgress, caught: unknown, emit: CommandEmitter): Promise<unknown> {
  const log: StepScope["log"] = (level, message, data) => emit.log(level, message, { step: null, ...(data ? { data } : {}) });
  // A restore's copy is dropped, or swapped back, before the old ERP resumes on it.
  const error = progress.migration === null ? caught : await progress.migration.undo(caught, log);
  const { previous } = progress;
  const decision = afterFailure({ snapshot: progress.snapshot, modulesRan: progress.modulesRan, rolledBack: previous?.rolledBack ?? false }, error);
  // A snapshot is taken by the database phase, which made `previous`: a rollback always has it.
  if (decision.action === "report" || previous === null) {
    if (decision.action === "report" && decision.resumePrevious) await previous?.resume(log);
    return error;
  }
  log("error", decision.log);
  const current = await findErpContainer(docker, layout);
  const isNew = current !== null && current.id !== progress.oldErpId;
  await previous.rollback({ step: "completed", signal: new AbortController().signal, log }, decision.snapshot, isNew ? current.id : null);
  return new CommandError(decision.failure.code, decision.failure.message);
}
