// What the platform API's deployment and environment operations share: loading an
// operation or environment with the caller's access to it, running an operation through
// the deployments service (so the one-active-operation rule and dispatch are the public
// API's too), and the per-organisation limit on heavy operations.
import type { Clock } from "../../../lib/clock.ts";
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Access } from "../../auth/access.ts";
import type { Permission } from "../../auth/permissions.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";
import type { RateLimiter } from "../../rate-limits/rate-limiter.ts";
import type { OperationKind } from "../operations/deployment-state.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";
import type { DeploymentsService, OperationOptions } from "../operations/operations.service.ts";
import type { PlatformDeploymentsRepo } from "./platform-deployments.repo.ts";

/** Platform spec 8: deployments and heavy operations, and manual retries, per organisation per minute. */
export const DEPLOY_RATE_LIMIT = 10;
export const RETRY_RATE_LIMIT = 10;

export const inProgress = () => new DomainError("deployment_in_progress", "Deployment already in progress");

export interface PlatformOperationsDeps {
  repo: PlatformDeploymentsRepo;
  clock: Clock;
  limits: RateLimiter;
  access: Pick<Access, "requireProject">;
  operations: Pick<DeploymentsService, "requestOperation">;
}

export function createPlatformOperations(deps: PlatformOperationsDeps) {
  const { repo, access } = deps;

  /** The deployment and the caller's access to it: 404 without a role in its project, 403 without `permission`. */
  async function load(person: SessionPrincipal, id: string, permission: Permission): Promise<DeploymentRow> {
    const row = await repo.byId(id);
    if (!row) throw new DomainError("not_found", "Deployment not found");
    await access.requireProject(person, row.projectId, permission, "Deployment");
    return row;
  }

  async function environmentOf(organizationId: string, projectId: string, environmentId: string): Promise<EnvironmentRow> {
    const env = await repo.environmentIn(organizationId, projectId, environmentId);
    if (!env) throw notFound("Environment");
    return env;
  }

  /** An environment by id and the caller's access to its project (404 "Environment not found" without a role there). */
  async function environmentWithAccess(person: SessionPrincipal, environmentId: string, permission: Permission) {
    const env = await repo.environment(environmentId);
    if (!env) throw notFound("Environment");
    const a = await access.requireProject(person, env.projectId, permission, "Environment");
    return { env, scope: { organizationId: a.organizationId, projectId: env.projectId } };
  }

  /** Environments of a project the caller may deploy to; another project's or a deleted one is 404. */
  async function deployableEnvironment(person: SessionPrincipal, projectId: string, environmentId: string) {
    const a = await access.requireProject(person, projectId, "project.environments.deploy", "Project");
    const env = await environmentOf(a.organizationId, projectId, environmentId);
    return { scope: { organizationId: a.organizationId, projectId }, env };
  }

  /** Runs an operation; the shared 409 becomes the platform's "Deployment already in progress". */
  async function operate(scope: { organizationId: string; projectId: string }, environmentId: string, kind: OperationKind, person: SessionPrincipal, opts: OperationOptions) {
    try {
      return await deps.operations.requestOperation(scope, environmentId, kind, { userId: person.userId, apiKeyId: null }, { initialStatus: "pending", ...opts });
    } catch (err) {
      if (err instanceof DomainError && err.code === "task_in_progress") throw inProgress();
      throw err;
    }
  }

  /** Takes one of the organisation's heavy operations this minute (deploys, destroys, backups, restores). */
  const heavy = (organizationId: string) =>
    deps.limits.take({ bucket: `platform-deploy:${organizationId}`, limit: DEPLOY_RATE_LIMIT, what: "deployments and heavy operations per organisation" });

  return { load, environmentOf, environmentWithAccess, deployableEnvironment, operate, heavy };
}
export type PlatformOperations = ReturnType<typeof createPlatformOperations>;
