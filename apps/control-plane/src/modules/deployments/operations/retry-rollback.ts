// The deployment lifecycle of the platform API (platform spec 3.1, 4.1 rules 1-3): who may
// do what to a deployment, the state rules and their messages. Retry and rollback (rules 1
// and 2) are the public API's too (retryTask, rollbackTask): one set of rules, two callers. What environments go
// through (rules 4, 5, 9) is environment-operations.service.ts.
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import { appendLogs } from "../../events/event-log.repo.ts";
import { isDeployKind, type OperationKind } from "../operations/deployment-state.ts";
import { deployOptionsExtra, type DeployOptions } from "../operations/deploy-options.ts";
import type { DeploymentRow, DeploymentsRepo } from "../operations/operations.repo.ts";
import type { Actor, OperationOptions, RequestedOperation } from "../operations/operations.service.ts";
import { createPlatformOperations, RETRY_RATE_LIMIT, type PlatformOperationsDeps } from "./platform-operations.ts";

/** The newest lines per step that a progress view shows. */
const PROGRESS_LINES_PER_STEP = 50;

/** Starts the operation a retry or rollback decided on, as its caller. */
type Run = (scope: { organizationId: string; projectId: string }, environmentId: string, kind: OperationKind, opts: OperationOptions) => Promise<RequestedOperation>;

export function createPlatformDeployments(
  deps: PlatformOperationsDeps & { pool: Parameters<typeof appendLogs>[0]; cancel: DeploymentsRepo["cancel"]; scoped: DeploymentsRepo["get"] },
) {
  const { repo, access } = deps;
  const ops = createPlatformOperations(deps);
  const { load, operate } = ops;

  /** Starts the new operation as a signed-in person: a platform record (pending, 409 deployment_in_progress). */
  const asPerson = (person: SessionPrincipal): Run => (scope, environmentId, kind, opts) => operate(scope, environmentId, kind, person, opts);
  /** Starts it as an API key: a public task (queued, 409 task_in_progress). */
  const asKey = (actor: Actor): Run => (scope, environmentId, kind, opts) => deps.operations.requestOperation(scope, environmentId, kind, actor, opts);
  const noExtraLimit = async () => {};

  async function scopedTask(scope: Scope, id: string): Promise<DeploymentRow> {
    const row = await deps.scoped(scope, id);
    if (!row) throw notFound("Task");
    return row;
  }

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
    const env = await ops.environmentOf(target.organizationId, target.projectId, target.environmentId);
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
    load,
    /** Shared with the environment operations and backup routes. */
    operations: ops,

    async create(person: SessionPrincipal, input: { project_id: string; environment_id: string; git_branch: string; git_commit?: string | undefined } & DeployOptions) {
      const { scope, env } = await ops.deployableEnvironment(person, input.project_id, input.environment_id);
      await ops.heavy(scope.organizationId);
      return operate(scope, env.id, "deploy", person, { git: { branch: input.git_branch, commit: input.git_commit ?? null }, extraData: deployOptionsExtra(input) });
    },

    async list(person: SessionPrincipal, q: { project_id?: string | undefined; status?: string | undefined; skip: number; limit: number }) {
      if (q.project_id) await access.requireProject(person, q.project_id, "project.deployments.list");
      return repo.list({ visibleTo: person.isPortalAdmin ? null : person.userId, projectId: q.project_id, status: q.status, skip: q.skip, limit: q.limit });
    },

    async logs(person: SessionPrincipal, id: string, q: { level?: string | undefined; skip: number; limit: number }) {
      const d = await load(person, id, "project.deployments.view");
      return { deployment: d, rows: await repo.logs(d.id, q) };
    },

    async progress(person: SessionPrincipal, id: string) {
      const d = await load(person, id, "project.deployments.view");
      const byStep = new Map<string, { message: string; timestamp: string }[]>();
      for (const r of await repo.latestLinesPerStep(d.id, PROGRESS_LINES_PER_STEP)) {
        const list = byStep.get(r.step) ?? [];
        list.push({ message: r.message, timestamp: new Date(r.ts).toISOString() });
        byStep.set(r.step, list);
      }
      return { deployment: d, byStep };
    },

    /** Rule 1: a failed deployment again, as a new record with the same code and configuration. */
    async retry(person: SessionPrincipal, id: string) {
      const original = await load(person, id, "project.environments.deploy");
      return retryOf(original, asPerson(person), () =>
        deps.limits.take({ bucket: `platform-retry:${original.organizationId}`, limit: RETRY_RATE_LIMIT, what: "manual retries per organisation" }),
      );
    },

    /** Rule 2: back to the code, image and configuration of a successful deployment; data untouched. */
    async rollback(person: SessionPrincipal, id: string) {
      const target = await load(person, id, "project.environments.deploy");
      return rollbackTo(target, asPerson(person), () => ops.heavy(target.organizationId));
    },

    /**
     * Rule 1 for an API key (public API): the task must be in the key's scope (404 "Task not
     * found" otherwise); the new task starts queued and a busy environment is 409 task_in_progress.
     * The key's own rate limit, taken on every request, is the limit.
     */
    async retryTask(scope: Scope, id: string, actor: Actor) {
      return retryOf(await scopedTask(scope, id), asKey(actor), noExtraLimit);
    },

    /** Rule 2 for an API key (public API), as retryTask. */
    async rollbackTask(scope: Scope, id: string, actor: Actor) {
      return rollbackTo(await scopedTask(scope, id), asKey(actor), noExtraLimit);
    },

    /** Rule 3: marks the deployment cancelled and logs who did it; the agent stops at its next step. */
    async cancel(person: SessionPrincipal, id: string) {
      const d = await load(person, id, "project.deployments.cancel");
      const cancelled = await deps.cancel(d.id, deps.clock.now(), `user:${person.userId}`);
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
export type PlatformDeployments = ReturnType<typeof createPlatformDeployments>;
