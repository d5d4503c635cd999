// What the platform API's deployment lifecycle reads and writes beyond creating operations
// (deployments.repo.ts): operations by id and as lists a person may see, their log lines,
// and the environment fields the platform API changes.
import { and, desc, eq, inArray, type SQL } from "drizzle-orm";
import { deployments, environments, type Database } from "@berth/db";
import { visibleProjectIds } from "../../auth/access.repo.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";
import { ACTIVE_STATUSES, DEPLOY_KINDS } from "../operations/deployment-state.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";

import type { LogRow } from "../operations/deployment-record.ts";

export function createPlatformDeploymentsRepo(db: Database) {
  const pool = db.$client;
  return {
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

    async logs(deploymentId: string, q: { level?: string | undefined; skip: number; limit: number }): Promise<LogRow[]> {
      const { rows } = await pool.query<LogRow>(
        `select id, deployment_id, ts, level, message, step, data from deployment_logs
         where deployment_id = $1 and ($2::text is null or level = $2) order by id offset $3 limit $4`,
        [deploymentId, q.level ?? null, q.skip, q.limit],
      );
      return rows;
    },

    /** The latest lines of each step (at most `perStep` a step), oldest first. */
    async latestLinesPerStep(deploymentId: string, perStep: number) {
      const { rows } = await pool.query<{ step: string; message: string; ts: Date }>(
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
  };
}
export type PlatformDeploymentsRepo = ReturnType<typeof createPlatformDeploymentsRepo>;
