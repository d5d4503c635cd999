// Step health_check: the new ERP serves its login page. Non-fatal (spec 4.1 rule 7), except
// when replaced data is at stake (rollback-policy.ts afterHealthCheck): after a module
// upgrade an unhealthy ERP is rolled back to the snapshot here; after a restore over live
// data the failure swaps the restore back (failDeploy).
import { checkHealth } from "../../environment/health-check.ts";
import { CommandError } from "../../runner/handler-types.ts";
import type { StepScope } from "../../runner/step-runner.ts";
import type { DeployContext } from "../deploy-context.ts";
import { afterHealthCheck } from "../rollback-policy.ts";
import type { Database } from "./database.ts";
import { removeParkedErps, type StartedErp } from "./start.ts";

export async function checkErpHealth(
  c: DeployContext,
  input: { erp: StartedErp; db: Pick<Database, "previous" | "migration" | "snapshot"> },
  step: StepScope,
): Promise<{ summary: string; healthy: boolean }> {
  const { docker, deps, timing } = c;
  const { erp, db } = input;
  const healthy = await checkHealth(docker, erp.containerId, erp.hostPort, step, deps.clock, timing);
  const decision = afterHealthCheck({ healthy, snapshot: db.snapshot, replacesExisting: db.migration?.replacesExisting === true });
  if (decision.action === "fail") throw new CommandError(decision.failure.code, decision.failure.message);
  if (decision.action === "rollback") {
    step.log("error", decision.log);
    const serving = (await db.previous.rollback(step, decision.snapshot, erp.containerId)) ?? erp;
    const again = await checkHealth(docker, serving.containerId, serving.hostPort, step, deps.clock, timing);
    step.log(again ? "info" : "warning", again ? "The previous version is healthy again" : "The previous version is not healthy either");
    throw new CommandError(decision.failure.code, decision.failure.message);
  }
  if (decision.removeParked) await removeParkedErps(c, erp.containerId, step);
  return { summary: decision.summary, healthy };
}
