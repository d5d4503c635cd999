// The deployment lifecycle of the platform API (platform spec 3.1, 4.1 rules 1-9): who may
// do what, the state rules and their messages. Operations themselves are created by the
// deployments service, so the one-active-operation rule and dispatch are shared with the
// public API.
import { and, desc, eq, inArray, sql, type SQL } from "drizzle-orm";
import { deployments, environments, type Database } from "@berth/db";
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { RateLimiter } from "../rate-limits/rate-limiter.ts";
import type { Access } from "../auth/access.ts";
import type { Permission } from "../auth/permissions.ts";
import type { SessionPrincipal } from "../auth/sessions.ts";
import { appendLogs } from "../events/event-log.repo.ts";
import type { EnvironmentRow } from "../environments/environments.repo.ts";
import type { DeploymentRow, DeploymentsRepo } from "./deployments.repo.ts";
import { DEPLOY_KINDS, type DeploymentsService, type OperationOptions } from "./deployments.service.ts";
import type { OperationKind } from "@berth/protocol";

/** Platform spec 8: deployments and heavy operations, and manual retries, per organisation per minute. */
export const DEPLOY_RATE_LIMIT = 10;
export const RETRY_RATE_LIMIT = 10;

export const DEPLOYMENT_STATUSES = ["pending", "queued", "building", "deploying", "running", "success", "failed", "cancelled", "rolled_back", "destroyed"] as const;

const IN_PROGRESS = () => new DomainError("deployment_in_progress", "Deployment already in progress");
const deploymentNotFound = () => new DomainError("not_found", "Deployment not found");

type Reply = { headers(h: Record<string, string>): unknown };

export function createPlatformDeployments(deps: {
  db: Database;
  pool: pg.Pool;
  clock: Clock;
  limits: RateLimiter;
  access: Access;
  repo: DeploymentsRepo;
  operations: DeploymentsService;
}) {
  const { db, access } = deps;

  /** The deployment and the caller's access to it: 404 without a role in its project, 403 without `permission`. */
  async function load(person: SessionPrincipal, id: string, permission: Permission): Promise<DeploymentRow> {
    const [row] = await db.select().from(deployments).where(eq(deployments.id, id));
    if (!row) throw deploymentNotFound();
    await access.requireProject(person, row.projectId, permission, "Deployment");
    return row;
  }

  async function environmentOf(organizationId: string, projectId: string, environmentId: string): Promise<EnvironmentRow> {
    const [env] = await db
      .select()
      .from(environments)
      .where(and(eq(environments.id, environmentId), eq(environments.projectId, projectId), eq(environments.organizationId, organizationId)));
    if (!env) throw notFound("Environment");
    return env;
  }

  /** Runs an operation; the shared 409 becomes the platform's "Deployment already in progress". */
  async function operate(scope: { organizationId: string; projectId: string }, environmentId: string, kind: OperationKind, person: SessionPrincipal, opts: OperationOptions) {
    try {
      return await deps.operations.requestOperation(scope, environmentId, kind, { userId: person.userId, apiKeyId: null }, { initialStatus: "pending", ...opts });
    } catch (err) {
      if (err instanceof DomainError && err.code === "task_in_progress") throw IN_PROGRESS();
      throw err;
    }
  }

  const heavy = (_reply: Reply, organizationId: string) =>
    deps.limits.take({ bucket: `platform-deploy:${organizationId}`, limit: DEPLOY_RATE_LIMIT, what: "deployments and heavy operations per organisation" });

  /** Environments of a project the caller may deploy to; another project's or a deleted one is 404. */
  async function deployableEnvironment(person: SessionPrincipal, projectId: string, environmentId: string) {
    const a = await access.requireProject(person, projectId, "project.environments.deploy", "Project");
    const env = await environmentOf(a.organizationId, projectId, environmentId);
    return { scope: { organizationId: a.organizationId, projectId }, env };
  }

  return {
    load,

    async create(person: SessionPrincipal, reply: Reply, input: { project_id: string; environment_id: string; git_branch: string; git_commit?: string | undefined }) {
      const { scope, env } = await deployableEnvironment(person, input.project_id, input.environment_id);
      await heavy(reply, scope.organizationId);
      return operate(scope, env.id, "deploy", person, { git: { branch: input.git_branch, commit: input.git_commit ?? null } });
    },

    async list(person: SessionPrincipal, q: { project_id?: string | undefined; status?: string | undefined; skip: number; limit: number }) {
      const conds: SQL[] = [];
      if (q.project_id) {
        await access.requireProject(person, q.project_id, "project.deployments.list");
        conds.push(eq(deployments.projectId, q.project_id));
      } else if (!person.isPortalAdmin) {
        // Every project the caller can see: as organisation owner/admin, or by a project role.
        conds.push(sql`${deployments.projectId} in (
          select pr.id from projects pr
          left join memberships m on m.organization_id = pr.organization_id and m.user_id = ${person.userId}
          left join project_memberships pm on pm.project_id = pr.id and pm.user_id = ${person.userId}
          where pr.deleted_at is null and (m.role in ('owner', 'admin') or pm.user_id is not null))`);
      }
      if (q.status) conds.push(eq(deployments.status, q.status));
      return db
        .select()
        .from(deployments)
        .where(conds.length ? and(...conds) : undefined)
        .orderBy(desc(deployments.createdAt), desc(deployments.id))
        .offset(q.skip)
        .limit(q.limit);
    },

    async logs(person: SessionPrincipal, id: string, q: { level?: string | undefined; skip: number; limit: number }) {
      const d = await load(person, id, "project.deployments.view");
      const { rows } = await deps.pool.query(
        `select id, deployment_id, ts, level, message, step, data from deployment_logs
         where deployment_id = $1 and ($2::text is null or level = $2) order by id offset $3 limit $4`,
        [d.id, q.level ?? null, q.skip, q.limit],
      );
      return { deployment: d, rows };
    },

    async progress(person: SessionPrincipal, id: string) {
      const d = await load(person, id, "project.deployments.view");
      // The latest lines of each step (at most 50 a step), oldest first.
      const { rows } = await deps.pool.query<{ step: string; message: string; ts: Date }>(
        `select step, message, ts from (
           select step, message, ts, id, row_number() over (partition by step order by id desc) as n
           from deployment_logs where deployment_id = $1 and step is not null) l
         where n <= 50 order by id`,
        [d.id],
      );
      const byStep = new Map<string, { message: string; timestamp: string }[]>();
      for (const r of rows) {
        const list = byStep.get(r.step) ?? [];
        list.push({ message: r.message, timestamp: new Date(r.ts).toISOString() });
        byStep.set(r.step, list);
      }
      return { deployment: d, byStep };
    },

    /** Rule 1: a failed deployment again, as a new record with the same code and configuration. */
    async retry(person: SessionPrincipal, _reply: Reply, id: string) {
      const original = await load(person, id, "project.environments.deploy");
      if (original.status !== "failed") throw new DomainError("not_retryable", "Can only retry failed deployments");
      await deps.limits.take({ bucket: `platform-retry:${original.organizationId}`, limit: RETRY_RATE_LIMIT, what: "manual retries per organisation" });
      const extra = (original.extraData ?? {}) as Record<string, unknown>;
      const { retry_of: _r, ...kept } = extra;
      return operate({ organizationId: original.organizationId, projectId: original.projectId }, original.environmentId, original.kind as OperationKind, person, {
        trigger: original.trigger === "rollback" ? "rollback" : "manual",
        git: { branch: original.gitBranch, commit: original.gitCommit, message: original.gitMessage },
        imageTag: original.kind === "rollback" ? original.imageTag : null,
        rollbackFromId: original.rollbackFromId,
        extraData: { ...kept, retry_of: original.id },
      });
    },

    /** Rule 2: back to the code, image and configuration of a successful deployment; data untouched. */
    async rollback(person: SessionPrincipal, reply: Reply, id: string) {
      const target = await load(person, id, "project.environments.deploy");
      if (target.status !== "success") throw new DomainError("not_rollback_target", "Can only rollback to successful deployments");
      if (!DEPLOY_KINDS.includes(target.kind)) throw new DomainError("not_rollback_target", `A ${target.kind} operation cannot be rolled back to; choose a successful deployment`);
      const env = await environmentOf(target.organizationId, target.projectId, target.environmentId);
      if (!env.isActive) throw new DomainError("environment_inactive", "The environment is not active (it was destroyed); deploy it again first");
      await heavy(reply, target.organizationId);
      // What runs now: the newest successful deployment of the environment.
      const [current] = await db
        .select({ id: deployments.id })
        .from(deployments)
        .where(and(eq(deployments.environmentId, env.id), eq(deployments.status, "success"), inArray(deployments.kind, DEPLOY_KINDS)))
        .orderBy(desc(deployments.createdAt))
        .limit(1);
      const extra = (target.extraData ?? {}) as { config?: unknown; addons?: unknown };
      return operate({ organizationId: target.organizationId, projectId: target.projectId }, env.id, "rollback", person, {
        trigger: "rollback",
        git: { branch: target.gitBranch, commit: target.gitCommit, message: target.gitMessage },
        imageTag: target.imageTag,
        rollbackFromId: current && current.id !== target.id ? current.id : null,
        extraData: { rollback_to: target.id, ...(extra.config ? { config: extra.config } : {}), ...(extra.addons ? { addons: extra.addons } : {}) },
      });
    },

    /** Rule 3: marks the deployment cancelled and logs who did it; the agent stops at its next step. */
    async cancel(person: SessionPrincipal, id: string) {
      const d = await load(person, id, "project.deployments.cancel");
      const cancelled = await deps.repo.cancel(d.id, deps.clock.now(), `user:${person.userId}`);
      if (!cancelled) {
        const [now] = await db.select({ status: deployments.status }).from(deployments).where(eq(deployments.id, d.id));
        throw new DomainError("not_cancellable", `Cannot cancel deployment in ${now?.status ?? d.status} state`);
      }
      await appendLogs(deps.pool, d.organizationId, [
        { deploymentId: d.id, ts: deps.clock.now().toISOString(), level: "warning", message: "Deployment cancelled by user", step: d.currentStep, data: { cancelled_by: person.userId } },
      ]);
      return { message: "Deployment cancelled" };
    },

    /** Rule 5: a destroy operation; an operation in progress is cancelled first. */
    async destroy(person: SessionPrincipal, reply: Reply, environmentId: string, deleteData: boolean) {
      const [env] = await db.select().from(environments).where(eq(environments.id, environmentId));
      if (!env) throw notFound("Environment");
      const a = await access.requireProject(person, env.projectId, "project.environments.deploy", "Environment");
      await heavy(reply, a.organizationId);
      const op = await operate({ organizationId: a.organizationId, projectId: env.projectId }, env.id, "destroy", person, {
        trigger: "destroy",
        extraData: { delete_data: deleteData },
        force: true,
      });
      return { op, env };
    },

    /** Deploys an environment (rule 4): with force a fresh redeploy even if one is running; without, skipped when it already runs. */
    async deployEnvironment(person: SessionPrincipal, reply: Reply, environmentId: string, input: { force: boolean; git_branch?: string | undefined }) {
      const [env] = await db.select().from(environments).where(eq(environments.id, environmentId));
      if (!env) throw notFound("Environment");
      const { scope } = await deployableEnvironment(person, env.projectId, env.id);
      const branchChanged = input.git_branch !== undefined && input.git_branch !== env.gitBranch;
      if (!input.force && env.status === "running" && !branchChanged) {
        const active = await db.select({ id: deployments.id }).from(deployments).where(and(eq(deployments.environmentId, env.id), inArray(deployments.status, ["pending", "queued", "building", "deploying", "running"])));
        if (active.length > 0) throw IN_PROGRESS();
        return { skipped: true as const, message: "The environment is already running; deploy with force: true to redeploy it", deployment: null };
      }
      await heavy(reply, scope.organizationId);
      const op = await operate(scope, env.id, input.force ? "redeploy" : "deploy", person, {
        force: input.force,
        ...(input.git_branch ? { git: { branch: input.git_branch } } : {}),
      });
      return { skipped: false as const, message: input.force ? "Redeploy started" : "Deployment started", deployment: op };
    },

    /** Rule 9: force_restore clears the restore flag of a migrated environment so the next deployment restores again. */
    async deployProjectEnvironment(person: SessionPrincipal, reply: Reply, projectId: string, environmentId: string, forceRestore: boolean) {
      const { scope, env } = await deployableEnvironment(person, projectId, environmentId);
      await heavy(reply, scope.organizationId);
      const reset = forceRestore && env.migrationId !== null && env.migrationRestoreCompleted;
      if (reset) {
        await db.update(environments).set({ migrationRestoreCompleted: false, migrationRestoreCompletedAt: null, updatedAt: deps.clock.now() }).where(eq(environments.id, env.id));
      }
      const op = await operate(scope, env.id, "deploy", person, { extraData: reset ? { force_restore: true } : {} });
      return { skipped: false as const, message: reset ? "Deployment started; the migration backup will be restored again, replacing current data" : "Deployment started", deployment: op, migration_restore_reset: reset };
    },

    async updateEnvironment(person: SessionPrincipal, projectId: string, environmentId: string, input: { auto_deploy?: boolean | undefined; git_branch?: string | undefined }) {
      const a = await access.requireProject(person, projectId, "project.environments.update", "Project");
      await environmentOf(a.organizationId, projectId, environmentId);
      const [row] = await db
        .update(environments)
        .set({ ...(input.auto_deploy !== undefined ? { autoDeploy: input.auto_deploy } : {}), ...(input.git_branch !== undefined ? { gitBranch: input.git_branch } : {}), updatedAt: deps.clock.now() })
        .where(eq(environments.id, environmentId))
        .returning();
      return row!;
    },

    /** The project scope of an environment the caller holds `permission` on. */
    async environmentScope(person: SessionPrincipal, environmentId: string, permission: Permission) {
      const [env] = await db.select().from(environments).where(eq(environments.id, environmentId));
      if (!env) throw notFound("Environment");
      const a = await access.requireProject(person, env.projectId, permission, "Environment");
      return { organizationId: a.organizationId, projectId: env.projectId };
    },
    heavy,
  };
}
export type PlatformDeployments = ReturnType<typeof createPlatformDeployments>;
