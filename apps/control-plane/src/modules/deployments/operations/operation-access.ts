// Who may act on which operation or environment, and how often: loading an operation or
// environment with the caller's access to it (a person's role in its project, or an API
// key's scope), and the per-organisation limits on heavy operations and manual retries.
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { Access } from "../../auth/access.ts";
import type { Permission } from "../../auth/permissions.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";
import type { RateLimiter } from "../../rate-limits/rate-limiter.ts";
import type { DeploymentRow, DeploymentsRepo } from "./operations.repo.ts";

/** Platform spec 8: deployments and heavy operations, and manual retries, per organisation per minute. */
export const DEPLOY_RATE_LIMIT = 10;
export const RETRY_RATE_LIMIT = 10;

export interface OperationAccessDeps {
  repo: Pick<DeploymentsRepo, "byId" | "get" | "environment" | "environmentIn">;
  limits: RateLimiter;
  access: Pick<Access, "requireProject">;
}

export function createOperationAccess(deps: OperationAccessDeps) {
  const { repo, access } = deps;

  /** The deployment and the caller's access to it: 404 without a role in its project, 403 without `permission`. */
  async function load(person: SessionPrincipal, id: string, permission: Permission): Promise<DeploymentRow> {
    const row = await repo.byId(id);
    if (!row) throw new DomainError("not_found", "Deployment not found");
    await access.requireProject(person, row.projectId, permission, "Deployment");
    return row;
  }

  /** A task in an API key's scope (404 "Task not found" otherwise). */
  async function scopedTask(scope: Scope, id: string): Promise<DeploymentRow> {
    const row = await repo.get(scope, id);
    if (!row) throw notFound("Task");
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

  /** Takes one of the organisation's heavy operations this minute (deploys, destroys, backups, restores). */
  const heavy = (organizationId: string) =>
    deps.limits.take({ bucket: `platform-deploy:${organizationId}`, limit: DEPLOY_RATE_LIMIT, what: "deployments and heavy operations per organisation" });

  /** Takes one of the organisation's manual retries this minute. */
  const retryLimit = (organizationId: string) =>
    deps.limits.take({ bucket: `platform-retry:${organizationId}`, limit: RETRY_RATE_LIMIT, what: "manual retries per organisation" });

  return { load, scopedTask, environmentOf, environmentWithAccess, deployableEnvironment, heavy, retryLimit };
}
export type OperationAccess = ReturnType<typeof createOperationAccess>;
