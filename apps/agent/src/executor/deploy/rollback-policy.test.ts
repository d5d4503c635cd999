// The deploy's failure policy, decision by decision: what a failure undoes depends only on
// what the deploy had done (a snapshot taken, modules run, a rollback already made).
import { describe, expect, it } from "vitest";
import type { PreDeploySnapshot } from "../environment/pre-deploy-snapshot.ts";
import { CommandError } from "../runner/handler-types.ts";
import { afterFailure, afterHealthCheck, afterModuleFailure } from "./rollback-policy.ts";

const snapshot: PreDeploySnapshot = {
  backup_id: "pre-1",
  kind: "pre_deploy",
  created_at: "2026-01-01T00:00:00.000Z",
  deployment_id: "d-1",
  database: "berth_snapshot_pre1",
  path: "/state/backups/pre-1",
  size_bytes: 1,
  modules: { base: "17.0.1.3" },
};

describe("afterFailure: any failure of the deploy", () => {
  const cancelled = new CommandError("cancelled", "cancelled");

  it("reports the failure as it is, and starts the stopped old ERP again, while no module ran", () => {
    expect(afterFailure({ snapshot: null, modulesRan: false, rolledBack: false }, cancelled)).toEqual({ action: "report", resumePrevious: true });
    // A snapshot whose module run never began: the database was not touched.
    expect(afterFailure({ snapshot, modulesRan: false, rolledBack: false }, cancelled)).toEqual({ action: "report", resumePrevious: true });
    // Modules ran on a database with no snapshot (new, restored, or snapshots off): nothing to go back to.
    expect(afterFailure({ snapshot: null, modulesRan: true, rolledBack: false }, cancelled)).toEqual({ action: "report", resumePrevious: true });
  });

  it("rolls back to the snapshot once modules ran after it, keeping the failure's code", () => {
    expect(afterFailure({ snapshot, modulesRan: true, rolledBack: false }, new CommandError("proxy_failed", "the proxy is down"))).toEqual({
      action: "rollback",
      snapshot,
      log: "The deployment failed after its module upgrade: rolling back to pre-1",
      failure: { code: "proxy_failed", message: "the proxy is down; rolled back to pre-1" },
    });
  });

  it("reports an error without a code as deploy_failed", () => {
    const decision = afterFailure({ snapshot, modulesRan: true, rolledBack: false }, new Error("socket hang up"));
    expect(decision).toMatchObject({ action: "rollback", failure: { code: "deploy_failed", message: "socket hang up; rolled back to pre-1" } });
  });

  it("neither rolls back twice nor starts the old ERP again after a rollback (the health check's)", () => {
    expect(afterFailure({ snapshot, modulesRan: true, rolledBack: true }, cancelled)).toEqual({ action: "report", resumePrevious: false });
  });
});

describe("afterModuleFailure: the module run exited non-zero", () => {
  it("fails without a rollback when there is no snapshot", () => {
    expect(afterModuleFailure({ snapshot: null, failed: "sale", why: "exit code 1", tail: "ERROR x" })).toEqual({
      action: "report",
      failure: { code: "module_update_failed", message: "module sale failed (exit code 1); last lines:\nERROR x" },
    });
  });

  it("rolls back to the snapshot and says so", () => {
    expect(afterModuleFailure({ snapshot, failed: null, why: "not done within 60 min", tail: "t" })).toEqual({
      action: "rollback",
      snapshot,
      log: "Module install/upgrade failed (not done within 60 min): rolling code, configuration, database and file store back to pre-1",
      failure: { code: "module_update_failed", message: "module install/upgrade failed (not done within 60 min): rolled back to pre-1; last lines:\nt" },
    });
  });
});

describe("afterHealthCheck", () => {
  it("is non-fatal without replaced data at stake", () => {
    expect(afterHealthCheck({ healthy: false, snapshot: null, replacesExisting: false })).toEqual({ action: "keep", removeParked: false, summary: "ERP not healthy (non-fatal)" });
    expect(afterHealthCheck({ healthy: true, snapshot: null, replacesExisting: false })).toEqual({ action: "keep", removeParked: false, summary: "ERP healthy" });
  });

  it("removes the parked previous ERP once healthy after an upgrade", () => {
    expect(afterHealthCheck({ healthy: true, snapshot, replacesExisting: false })).toEqual({ action: "keep", removeParked: true, summary: "ERP healthy" });
  });

  it("rolls an unhealthy ERP back to the snapshot after an upgrade", () => {
    expect(afterHealthCheck({ healthy: false, snapshot, replacesExisting: false })).toEqual({
      action: "rollback",
      snapshot,
      log: "The ERP is not healthy after the module upgrade: rolling code, configuration, database and file store back",
      failure: { code: "health_check_failed", message: "the ERP was not healthy after the module upgrade: rolled back to pre-1" },
    });
  });

  it("fails an unhealthy ERP on a restore that replaced live data (the failure swaps it back)", () => {
    expect(afterHealthCheck({ healthy: false, snapshot: null, replacesExisting: true })).toEqual({
      action: "fail",
      failure: { code: "restore_unhealthy", message: "the ERP was not healthy on the restored database" },
    });
    expect(afterHealthCheck({ healthy: true, snapshot: null, replacesExisting: true })).toMatchObject({ action: "keep", summary: "ERP healthy" });
  });
});
