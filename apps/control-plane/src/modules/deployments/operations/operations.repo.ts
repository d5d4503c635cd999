// SQL for operations (rows of `deployments`). Creating one locks the environment row,
// so concurrent requests on one environment are decided one after the other; the partial
// unique index is the final guarantee.
import { and, count, eq, getTableColumns, gt, inArray, isNull, sql } from "drizzle-orm";
import { isUniqueViolation } from "../../../lib/errors.ts";
import { agentCommands, deployments, environments, projects, type Database } from "@berth/db";
import { ACTIVE_STATUSES } from "./deployment-state.ts";
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
