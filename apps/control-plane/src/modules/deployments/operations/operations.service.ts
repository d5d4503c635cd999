// The operations service: every rule about an operation on an environment, whichever API
// asks (public spec 3.2, 4.1; platform spec 3.1, 4.1). The rules are grouped by what they
// are about: starting one (operation-start.ts), who may act and how often
// (operation-access.ts), reading them (operation-reads.ts), retry and rollback
// (retry-rollback.ts), a person's environment deploys (environment-deploys.ts); the
// actions and cancelling are here.
import type { Clock } from "../../../lib/clock.ts";
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import { appendLogs } from "../../events/event-log.repo.ts";
import type { DeploymentsRepo } from "./operations.repo.ts";
import { taskView } from "./task-view.ts";
import { deployOptionsExtra, type DeployOptions } from "./deploy-options.ts";
import { createOperationStart, issuerOf, type Actor, type OperationStartDeps, type Requirement } from "./operation-start.ts";
import { createOperationAccess, type OperationAccessDeps } from "./operation-access.ts";
import { createOperationReads, type OperationReadsDeps } from "./operation-reads.ts";
import { createRetryRollback } from "./retry-rollback.ts";
import { createEnvironmentDeploys, type EnvironmentDeploysDeps } from "./environment-deploys.ts";

export const ACTIONS = ["deploy", "redeploy", "restart", "start", "stop"] as const;
export type Action = (typeof ACTIONS)[number];

/** Environment status each action needs; deploy and redeploy need none. */
const REQUIRED_STATUS: Partial<Record<Action, Requirement>> = {
  restart: { status: "running", code: "environment_not_running", message: "The environment is not running; start or deploy it first" },
  stop: { status: "running", code: "environment_not_running", message: "The environment is not running" },
  start: { status: "stopped", code: "environment_not_stopped", message: "The environment is not stopped" },
};

export type DeploymentsServiceDeps = OperationStartDeps &
  Omit<OperationReadsDeps, "deployments"> &
  Omit<OperationAccessDeps, "repo"> &
  Omit<EnvironmentDeploysDeps, "repo"> & {
    deployments: DeploymentsRepo;
    clock: Clock;
    /** Where the platform API's cancel writes its log line. */
    pool: Parameters<typeof appendLogs>[0];
  };

export function createDeploymentsService(deps: DeploymentsServiceDeps) {
  const repo = deps.deployments;
  const start = createOperationStart(deps);
  const ops = createOperationAccess({ ...deps, repo });
  const { requestOperation } = start;
  return {
    ...start,
    ...createOperationReads({ ...deps, ops }),
    ...createRetryRollback({ repo, access: ops, start }),
    ...createEnvironmentDeploys({ ...deps, repo, ops, start }),
    heavy: ops.heavy,

    /** `options`: a deploy's or redeploy's modules and init, kept in its extra_data. */
    requestAction(scope: Scope, environmentId: string, action: Action, actor: Actor, options?: DeployOptions) {
      const required = REQUIRED_STATUS[action];
      const extra = action === "deploy" || action === "redeploy" ? deployOptionsExtra(options) : {};
      return requestOperation(scope, environmentId, action, actor, { ...(required ? { required } : {}), extraData: extra });
    },

    /** Removes the environment's containers, database and network; with deleteData also its files. */
    destroy(scope: Scope, environmentId: string, deleteData: boolean, actor: Actor) {
      return requestOperation(scope, environmentId, "destroy", actor, { extraData: { delete_data: deleteData } });
    },

    /**
     * Cancels a task that has not finished (public API). Not yet delivered: it never will be.
     * Running: the agent is told, and stops at its next step boundary.
     */
    async cancel(scope: Scope, id: string, actor: Actor) {
      const row = await repo.get(scope, id);
      if (!row) throw notFound("Task");
      const by = issuerOf(actor);
      const cancelled = await repo.cancel(row.id, deps.clock.now(), by);
      if (!cancelled) throw new DomainError("task_not_cancellable", `Cannot cancel deployment in ${row.status} state`);
      return taskView(cancelled);
    },

    /** Rule 3 (platform API): marks the deployment cancelled and logs who did it; the agent stops at its next step. */
    async cancelDeployment(person: SessionPrincipal, id: string) {
      const d = await ops.load(person, id, "project.deployments.cancel");
      const cancelled = await repo.cancel(d.id, deps.clock.now(), `user:${person.userId}`);
      if (!cancelled) {
        const now = await repo.byId(d.id);
        throw new DomainError("not_cancellable", `Cannot cancel deployment in ${now?.status ?? d.status} state`);
      }
      await appendLogs(deps.pool, d.organizationId, [
        { deploymentId: d.id, ts: deps.clock.now().toISOString(), level: "warning", message: "Deployment cancelled by user", step: d.currentStep, data: { cancelled_by: person.userId } },
      ]);
      return { message: "Deployment cancelled" };
    },
  };
}
export type DeploymentsService = ReturnType<typeof createDeploymentsService>;
