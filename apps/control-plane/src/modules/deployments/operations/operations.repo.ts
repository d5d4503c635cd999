// SQL for operations (rows of `deployments`), whichever API asks: creating, cancelling and
// reading them, their log lines, and the environment fields the platform API changes.
// Creating one locks the environment row, so concurrent requests on one environment are
// decided one after the other; the partial unique index is the final guarantee.
import { and, count, desc, eq, getTableColumns, gt, inArray, isNull, sql, type SQL } from "drizzle-orm";
import { isUniqueViolation } from "../../../lib/errors.ts";
import { agentCommands, deployments, environments, projects, type Database } from "@berth/db";
import { ACTIVE_STATUSES, DEPLOY_KINDS } from "./deployment-state.ts";
import { visibleProjectIds } from "../../auth/access.repo.ts";
import { CANCEL_CHANNEL } from "../../agents/channels.ts";
import type { CursorPosition } from "../../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../../db/keyset.ts";
import { preparedRead } from "../../../db/prepared-read.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";

export type DeploymentRow = typeof deployments.$inferSelect;
/** The columns the public task projection (task-view.ts) reads. */
const TASK_COLUMNS = {
  id: deployments.id,
  kind: deployments.kind,
  status: deployments.status,
  environmentId: deployments.environmentId,
  progressPercent: deployments.progressPercent,
  currentStep: deployments.currentStep,
  stepsCompleted: deployments.stepsCompleted,
  totalSteps: deployments.totalSteps,
  startedAt: deployments.startedAt,
  completedAt: deployments.completedAt,
  errorMessage: deployments.errorMessage,
  triggeredBy: deployments.triggeredBy,
  createdAt: deployments.createdAt,
  modulesResult: deployments.modulesResult,
  testsResult: deployments.testsResult,
};
export type TaskRow = Pick<DeploymentRow, keyof typeof TASK_COLUMNS>;
/** A row of deployment_logs (deployment-record.ts's LogRow, which shows it). */
export interface DeploymentLogRow {
  id: number;
  deployment_id: string;
  ts: Date;
  level: string;
  message: string;
  step: string | null;
  data: Record<string, unknown>;
}
export type NewOperation = Omit<typeof deployments.$inferInsert, "version" | "organizationId" | "projectId" | "environmentId" | "serverId">;

export type CreateOutcome =
  | { kind: "created"; row: DeploymentRow }
  /** The operation the same request (same idempotency scope and key) made before. */
  | { kind: "existing"; row: DeploymentRow }
  | { kind: "not_found" }
  | { kind: "busy"; active: DeploymentRow }
  | { kind: "refused"; environment: EnvironmentRow };


export function createDeploymentsRepo(db: Database) {
  // Task polling is hot: its SQL is a named statement per shape (organisation or project key),
  // sent without drizzle (db/prepared-read.ts). A poll reads only what the task shows, not the
  // configuration snapshot and the rest of the row.
  const visibleById = (scoped: boolean) =>
    and(
      eq(deployments.id, sql.placeholder("id")),
      eq(deployments.organizationId, sql.placeholder("org")),
      isNull(projects.deletedAt),
      ...(scoped ? [eq(deployments.projectId, sql.placeholder("project"))] : []),
    );
  type VisibleById = ReturnType<typeof visibleById>;
  /** The named statements of one read, for organisation keys and for project keys. */
  const byScope = <R>(name: string, query: (where: VisibleById) => Parameters<typeof preparedRead<R>>[2], fields: Record<string, unknown>) => {
    const [org, project] = [false, true].map((scoped) => preparedRead<R>(db.$client, `${name}_${scoped}`, query(visibleById(scoped)), fields));
    const first = (rows: R[]) => rows[0];
    return (scope: Scope, id: string): Promise<R | undefined> =>
      (scope.projectId ? project!({ id, org: scope.organizationId, project: scope.projectId }) : org!({ id, org: scope.organizationId })).then(first);
  };
  const columns = getTableColumns(deployments);
  const visibleRow = byScope<DeploymentRow>("deployments_get", (where) => db.select(columns).from(deployments).innerJoin(projects, eq(projects.id, deployments.projectId)).where(where), columns);
  const visibleTask = byScope<TaskRow>("deployments_task", (where) => db.select(TASK_COLUMNS).from(deployments).innerJoin(projects, eq(projects.id, deployments.projectId)).where(where), TASK_COLUMNS);
  return {
    /** Log lines of a deployment in the order they were written, after the line `afterId` (limit+1 rows), and how many it has. */
    async logsAfter(deploymentId: string, afterId: string | null, limit: number): Promise<{ rows: DeploymentLogRow[]; total: number }> {
      const { rows } = await db.$client.query<DeploymentLogRow>(
        `select id, deployment_id, ts, level, message, step, data from deployment_logs
         where deployment_id = $1 and ($2::bigint is null or id > $2::bigint) order by id limit $3`,
        [deploymentId, afterId, limit + 1],
      );
      const { rows: n } = await db.$client.query<{ n: number }>("select count(*)::int as n from deployment_logs where deployment_id = $1", [deploymentId]);
      return { rows, total: n[0]?.n ?? 0 };
    },

    get: visibleRow,

    /** Any operation by id, unscoped: the platform API checks the caller's role in its project after. */
    async byId(id: string): Promise<DeploymentRow | undefined> {
      const [row] = await db.select().from(deployments).where(eq(deployments.id, id));
      return row;
    },

    /** Newest first; `visibleTo`: only the projects that person may see (null: every project). */
    async list(q: { visibleTo: string | null; projectId?: string | undefined; status?: string | undefined; skip: number; limit: number }): Promise<DeploymentRow[]> {
      const conds: SQL[] = [];
      if (q.projectId) conds.push(eq(deployments.projectId, q.projectId));
      else if (q.visibleTo !== null) conds.push(inArray(deployments.projectId, visibleProjectIds(q.visibleTo)));
      if (q.status) conds.push(eq(deployments.status, q.status));
      return db
        .select()
        .from(deployments)
        .where(conds.length ? and(...conds) : undefined)
        .orderBy(desc(deployments.createdAt), desc(deployments.id))
        .offset(q.skip)
        .limit(q.limit);
    },

    /** Log lines in the order they were written, `level` only if given, by offset (the platform API's paging). */
    async logPage(deploymentId: string, q: { level?: string | undefined; skip: number; limit: number }): Promise<DeploymentLogRow[]> {
      const { rows } = await db.$client.query<DeploymentLogRow>(
        `select id, deployment_id, ts, level, message, step, data from deployment_logs
         where deployment_id = $1 and ($2::text is null or level = $2) order by id offset $3 limit $4`,
        [deploymentId, q.level ?? null, q.skip, q.limit],
      );
      return rows;
    },

    /** The latest lines of each step (at most `perStep` a step), oldest first. */
    async latestLinesPerStep(deploymentId: string, perStep: number) {
      const { rows } = await db.$client.query<{ step: string; message: string; ts: Date }>(
        `select step, message, ts from (
           select step, message, ts, id, row_number() over (partition by step order by id desc) as n
           from deployment_logs where deployment_id = $1 and step is not null) l
         where n <= $2 order by id`,
        [deploymentId, perStep],
      );
      return rows;
    },

    /** What runs now: the newest successful deploy-kind operation of the environment. */
    async currentDeployment(environmentId: string): Promise<{ id: string } | undefined> {
      const [row] = await db
        .select({ id: deployments.id })
        .from(deployments)
        .where(and(eq(deployments.environmentId, environmentId), eq(deployments.status, "success"), inArray(deployments.kind, [...DEPLOY_KINDS])))
        .orderBy(desc(deployments.createdAt))
        .limit(1);
      return row;
    },

    async hasActive(environmentId: string): Promise<boolean> {
      const rows = await db
        .select({ id: deployments.id })
        .from(deployments)
        .where(and(eq(deployments.environmentId, environmentId), inArray(deployments.status, [...ACTIVE_STATUSES])));
      return rows.length > 0;
    },

    /** An environment by id, unscoped: the platform API checks the caller's role in its project after. */
    async environment(id: string): Promise<EnvironmentRow | undefined> {
      const [env] = await db.select().from(environments).where(eq(environments.id, id));
      return env;
    },

    async environmentIn(organizationId: string, projectId: string, id: string): Promise<EnvironmentRow | undefined> {
      const [env] = await db
        .select()
        .from(environments)
        .where(and(eq(environments.id, id), eq(environments.projectId, projectId), eq(environments.organizationId, organizationId)));
      return env;
    },

    async updateEnvironment(id: string, set: Partial<typeof environments.$inferInsert>): Promise<EnvironmentRow> {
      const [row] = await db.update(environments).set(set).where(eq(environments.id, id)).returning();
      return row!;
    },

    /** What the task projection shows of an operation (TASK_COLUMNS), for polling. */
    getTask: visibleTask,

    async listForEnvironment(environmentId: string, kinds: string[], limit: number, after?: CursorPosition) {
      const where = and(eq(deployments.environmentId, environmentId), inArray(deployments.kind, kinds));
      const rows = await db
        .select()
        .from(deployments)
        .where(and(where, olderThan(deployments.createdAt, deployments.id, after)))
        .orderBy(...newestFirst(deployments.createdAt, deployments.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(deployments).where(where);
      return { rows, total: total?.n ?? 0 };
    },

    /**
     * Marks an unfinished operation cancelled. A command still waiting in the outbox is
     * withdrawn; one the agent already took is announced on the cancel channel so the
     * replica holding the agent sends command.cancel.
     */
    async cancel(id: string, at: Date, by: string): Promise<DeploymentRow | undefined> {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(deployments)
          .set({ status: "cancelled", completedAt: at, errorMessage: `Cancelled by ${by}` })
          .where(and(eq(deployments.id, id), inArray(deployments.status, [...ACTIVE_STATUSES])))
          .returning();
        if (!row) return undefined;
        const withdrawn = await tx
          .update(agentCommands)
          .set({ state: "cancelled", completedAt: at })
          .where(and(eq(agentCommands.deploymentId, id), eq(agentCommands.state, "pending")))
          .returning({ id: agentCommands.commandId });
        if (withdrawn.length === 0) {
          const [cmd] = await tx.select().from(agentCommands).where(eq(agentCommands.deploymentId, id));
          if (cmd) await tx.execute(sql`select pg_notify(${CANCEL_CHANNEL}, ${`${cmd.serverId}:${cmd.commandId}`})`);
        }
        // A deploy stopped half-way leaves the environment in no known good state.
        await tx
          .update(environments)
          .set({ status: "error", updatedAt: at })
          .where(and(eq(environments.id, row.environmentId), eq(environments.status, "deploying")));
        return row;
      });
    },

    /**
     * Creates an operation on an environment if none is active and `allowed` accepts the
     * environment as it is now (read under the row lock).
     */
    async createOperation(
      scope: Scope,
      environmentId: string,
      op: NewOperation,
      allowed: (env: EnvironmentRow) => boolean,
      /** Fields taken from the environment as it is under the lock (e.g. a configuration snapshot). */
      fill: (env: EnvironmentRow) => Partial<NewOperation> = () => ({}),
      /** With op's idempotency key: an operation made with it since then is this request's. */
      sameRequestSince?: Date,
    ): Promise<CreateOutcome> {
      try {
        return await db.transaction(async (tx) => {
          const envConds = [eq(environments.id, environmentId), eq(environments.organizationId, scope.organizationId), isNull(projects.deletedAt)];
          if (scope.projectId) envConds.push(eq(environments.projectId, scope.projectId));
          const [found] = await tx
            .select({ env: environments })
            .from(environments)
            .innerJoin(projects, eq(projects.id, environments.projectId))
            .where(and(...envConds))
            .for("update", { of: environments });
          if (!found) return { kind: "not_found" } as const;
          const env = found.env;
          if (op.idempotencyKey && op.idempotencyScope && sameRequestSince) {
            // Looked up under the environment's lock: a retry racing its first try waits for it.
            const [made] = await tx
              .select()
              .from(deployments)
              .where(
                and(
                  eq(deployments.idempotencyScope, op.idempotencyScope),
                  eq(deployments.idempotencyKey, op.idempotencyKey),
                  eq(deployments.environmentId, env.id),
                  gt(deployments.createdAt, sameRequestSince),
                ),
              );
            if (made) return { kind: "existing", row: made } as const;
          }
          const [active] = await tx
            .select()
            .from(deployments)
            .where(and(eq(deployments.environmentId, env.id), inArray(deployments.status, [...ACTIVE_STATUSES])));
          if (active) return { kind: "busy", active } as const;
          if (!allowed(env)) return { kind: "refused", environment: env } as const;
          const [bumped] = await tx
            .update(environments)
            .set({ lastVersion: env.lastVersion + 1 })
            .where(eq(environments.id, env.id))
            .returning({ version: environments.lastVersion });
          const [row] = await tx
            .insert(deployments)
            .values({
              ...op,
              ...fill(env),
              organizationId: env.organizationId,
              projectId: env.projectId,
              environmentId: env.id,
              serverId: env.serverId,
              version: bumped!.version,
            })
            .returning();
          return { kind: "created", row: row! } as const;
        });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        const [active] = await db
          .select()
          .from(deployments)
          .where(and(eq(deployments.environmentId, environmentId), inArray(deployments.status, [...ACTIVE_STATUSES])));
        if (!active) throw err;
        return { kind: "busy", active };
      }
    },
  };
}
export type DeploymentsRepo = ReturnType<typeof createDeploymentsRepo>;
