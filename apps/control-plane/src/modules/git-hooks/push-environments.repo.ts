// SQL of the development environments pushes make (push-environments.ts): a project's
// development settings, whether a branch has an environment, the names taken, production's
// size, and the development environments that run.
import { and, eq, sql } from "drizzle-orm";
import { environments, type Database } from "@berth/db";
import { ACTIVE_STATUSES, DEPLOY_KINDS } from "../deployments/operations/deployment-state.ts";

/** A project's development settings; `server` null: pushes create no environment. */
export interface DevelopmentSettings {
  server: { id: string; live: boolean } | null;
  limit: number;
}

/** A development environment that runs, deploys, or holds an operation. */
export interface RunningDevelopment {
  id: string;
  status: string;
  /** The kind of its operation queued or in progress; null: none (idle, when it runs). */
  activeKind: string | null;
  /** When its last successful deploy ended; null: never. */
  lastDeployedAt: Date | null;
  createdAt: Date;
}

export function createPushEnvironmentsRepo(db: Database) {
  return {
    /**
     * Runs `fn` while holding the project's development lock (a transaction-level advisory
     * lock, every replica): pushes of several new branches at once (git push --all sends one
     * hook each) count and stop in turn, so together they stay within the limit. `fn` works
     * on other connections; a lock not had in 30 s fails the push (its host delivers it again).
     */
    async serialised<T>(projectId: string, fn: () => Promise<T>): Promise<T> {
      return db.transaction(async (tx) => {
        await tx.execute(sql`set local lock_timeout = '30s'`);
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`development_limit:${projectId}`}, 0))`);
        return fn();
      });
    },

    async settings(projectId: string): Promise<DevelopmentSettings | undefined> {
      const { rows } = await db.execute<{ server_id: string | null; live: boolean | null; development_limit: number }>(sql`
        select p.development_server_id as server_id, (s.id is not null and s.deleted_at is null) as live, p.development_limit
        from projects p left join servers s on s.id = p.development_server_id
        where p.id = ${projectId}`);
      const r = rows[0];
      if (!r) return undefined;
      return { server: r.server_id ? { id: r.server_id, live: r.live === true } : null, limit: r.development_limit };
    },

    /** Whether an active environment of the project (any stage) follows `branch`. */
    async branchHasEnvironment(projectId: string, branch: string): Promise<boolean> {
      const rows = await db
        .select({ id: environments.id })
        .from(environments)
        .where(and(eq(environments.projectId, projectId), eq(environments.isActive, true), eq(environments.gitBranch, branch)))
        .limit(1);
      return rows.length > 0;
    },

    /** The names of the project's active environments (a destroyed one's name is free). */
    async activeNames(projectId: string): Promise<string[]> {
      const rows = await db
        .select({ name: environments.name })
        .from(environments)
        .where(and(eq(environments.projectId, projectId), eq(environments.isActive, true)));
      return rows.map((r) => r.name);
    },

    /** The size of the project's production environment, if it has one. */
    async productionSize(projectId: string) {
      const [row] = await db
        .select({ cpu_cores: environments.cpuCores, ram_mb: environments.ramMb, disk_gb: environments.diskGb, workers: environments.workers })
        .from(environments)
        .where(and(eq(environments.projectId, projectId), eq(environments.stage, "production")));
      return row;
    },

    /** The project's active development environments that run or deploy, or hold an operation. */
    async runningDevelopment(projectId: string): Promise<RunningDevelopment[]> {
      const { rows } = await db.execute<{ id: string; status: string; active_kind: string | null; last_deployed_at: string | Date | null; created_at: string | Date }>(sql`
        select e.id, e.status, e.created_at, a.kind as active_kind,
          (select max(d.completed_at) from deployments d
            where d.environment_id = e.id and d.kind in ${[...DEPLOY_KINDS]} and d.status = 'success') as last_deployed_at
        from environments e
        left join lateral (select d.kind from deployments d where d.environment_id = e.id and d.status in ${[...ACTIVE_STATUSES]} limit 1) a on true
        where e.project_id = ${projectId} and e.is_active and e.stage = 'development'
          and (e.status in ('running', 'deploying') or a.kind is not null)`);
      return rows.map((r) => ({
        id: r.id,
        status: r.status,
        activeKind: r.active_kind,
        lastDeployedAt: r.last_deployed_at === null ? null : new Date(r.last_deployed_at),
        createdAt: new Date(r.created_at),
      }));
    },
  };
}
export type PushEnvironmentsRepo = ReturnType<typeof createPushEnvironmentsRepo>;
