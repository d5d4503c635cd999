// Retry and rollback (platform spec 4.1 rules 1 and 2): what a new operation repeats of a
// failed one, or brings back of a successful one. One set of rules, two callers: a person
// (platform API: a pending record, 409 deployment_in_progress, the organisation's limits)
// and an API key (public API: a queued task, 409 task_in_progress, the key's own limit).
import { DomainError } from "../../../lib/errors.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import { isDeployKind, type OperationKind } from "./deployment-state.ts";
import type { DeploymentRow, DeploymentsRepo } from "./operations.repo.ts";
import type { OperationAccess } from "./operation-access.ts";
import type { Actor, OperationOptions, OperationScope, OperationStart, RequestedOperation } from "./operation-start.ts";

/** Starts the operation a retry or rollback decided on, as its caller. */
type Run = (scope: OperationScope, environmentId: string, kind: OperationKind, opts: OperationOptions) => Promise<RequestedOperation>;

export function createRetryRollback(deps: {
  repo: Pick<DeploymentsRepo, "currentDeployment">;
  access: OperationAccess;
  start: OperationStart;
}) {
  const { repo, access, start } = deps;
  /** Starts the new operation as a signed-in person: a platform record (pending, 409 deployment_in_progress). */
  const asPerson = (person: SessionPrincipal): Run => (scope, environmentId, kind, opts) => start.operate(scope, environmentId, kind, person, opts);
  /** Starts it as an API key: a public task (queued, 409 task_in_progress). */
  const asKey = (actor: Actor): Run => (scope, environmentId, kind, opts) => start.requestOperation(scope, environmentId, kind, actor, opts);
  const noExtraLimit = async () => {};

  /** Rule 1 for a deployment the caller may deploy: only a failed one, with its branch, commit, image and configuration. */
  async function retryOf(original: DeploymentRow, run: Run, limit: () => Promise<unknown>) {
    if (original.status !== "failed") throw new DomainError("not_retryable", "Can only retry failed deployments");
    await limit();
    const extra = (original.extraData ?? {}) as Record<string, unknown>;
    const { retry_of: _r, ...kept } = extra;
    return run({ organizationId: original.organizationId, projectId: original.projectId }, original.environmentId, original.kind as OperationKind, {
      trigger: original.trigger === "rollback" ? "rollback" : "manual",
      git: { branch: original.gitBranch, commit: original.gitCommit, message: original.gitMessage },
      imageTag: original.kind === "rollback" ? original.imageTag : null,
      rollbackFromId: original.rollbackFromId,
      extraData: { ...kept, retry_of: original.id },
    });
  }

  /** Rule 2 for a deployment the caller may deploy: only a successful deploy of a still active environment. */
  async function rollbackTo(target: DeploymentRow, run: Run, limit: () => Promise<unknown>) {
    if (target.status !== "success") throw new DomainError("not_rollback_target", "Can only rollback to successful deployments");
    if (!isDeployKind(target.kind)) throw new DomainError("not_rollback_target", `A ${target.kind} operation cannot be rolled back to; choose a successful deployment`);
    const env = await access.environmentOf(target.organizationId, target.projectId, target.environmentId);
    if (!env.isActive) throw new DomainError("environment_inactive", "The environment is not active (it was destroyed); deploy it again first");
    await limit();
    const current = await repo.currentDeployment(env.id);
    const extra = (target.extraData ?? {}) as { config?: unknown; addons?: unknown };
    return run({ organizationId: target.organizationId, projectId: target.projectId }, env.id, "rollback", {
      trigger: "rollback",
      git: { branch: target.gitBranch, commit: target.gitCommit, message: target.gitMessage },
      imageTag: target.imageTag,
      rollbackFromId: current && current.id !== target.id ? current.id : null,
      extraData: { rollback_to: target.id, ...(extra.config ? { config: extra.config } : {}), ...(extra.addons ? { addons: extra.addons } : {}) },
    });
  }

  return {
    /** Rule 1: a failed deployment again, as a new record with the same code and configuration. */
    async retry(person: SessionPrincipal, id: string) {
      const original = await access.load(person, id, "project.environments.deploy");
      return retryOf(original, asPerson(person), () => access.retryLimit(original.organizationId));
    },

    /** Rule 2: back to the code, image and configuration of a successful deployment; data untouched. */
    async rollback(person: SessionPrincipal, id: string) {
      const target = await access.load(person, id, "project.environments.deploy");
      return rollbackTo(target, asPerson(person), () => access.heavy(target.organizationId));
    },

    /**
     * Rule 1 for an API key (public API): the task must be in the key's scope (404 "Task not
     * found" otherwise); the new task starts queued and a busy environment is 409 task_in_progress.
     * The key's own rate limit, taken on every request, is the limit.
     */
    async retryTask(scope: Scope, id: string, actor: Actor) {
      return retryOf(await access.scopedTask(scope, id), asKey(actor), noExtraLimit);
    },

    /** Rule 2 for an API key (public API), as retryTask. */
    async rollbackTask(scope: Scope, id: string, actor: Actor) {
      return rollbackTo(await access.scopedTask(scope, id), asKey(actor), noExtraLimit);
    },
  };
}
