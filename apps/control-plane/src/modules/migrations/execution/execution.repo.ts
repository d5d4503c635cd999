// SQL of a migration's run (record/migrations.repo.ts holds the record's): the running
// migrations whose deployment ended unseen (the reconcile job), and, inside the ingest
// transaction (migration-progress.ts), the migrations the agent's events move.
import { and, eq, inArray, lt, sql } from "drizzle-orm";
import type pg from "pg";
import { deployments, migrations, type Database } from "@berth/db";

export function createExecutionRepo(db: Database) {
  return {
    /**
     * Running migrations whose deployment ended more than a minute ago without the end
     * reaching the migration (a command that expired undelivered, a deployment cancelled
     * through the deployments API, the stuck sweep): what the reconcile job settles.
     */
    async stalled(limit = 100) {
      return db
        .select({ m: migrations, deploymentStatus: deployments.status, deploymentError: deployments.errorMessage })
        .from(migrations)
        .innerJoin(deployments, eq(deployments.id, migrations.deploymentId))
        .where(and(eq(migrations.status, "processing"), inArray(deployments.status, ["success", "failed", "cancelled"]), lt(deployments.completedAt, sql`now() - interval '1 minute'`)))
        .limit(limit);
    },
  };
}
export type ExecutionRepo = ReturnType<typeof createExecutionRepo>;

// Inside the ingest transaction (migration-progress.ts), on its client.

/** The deployments of these commands of the server. */
export async function deploymentsOfCommands(client: pg.PoolClient, serverId: string, commandIds: string[]): Promise<Map<string, string>> {
  const { rows } = await client.query<{ command_id: string; deployment_id: string }>(
    "select command_id, deployment_id from agent_commands where command_id = any($1::uuid[]) and server_id = $2 and deployment_id is not null",
    [commandIds, serverId],
  );
  return new Map(rows.map((r) => [r.command_id, r.deployment_id]));
}

export interface RunningMigration {
  id: string;
  organization_id: string;
  deployment_id: string;
  steps: unknown;
  current_step: string | null;
  git_repo_url: string | null;
}

/** The running migrations these deployments (on this server) execute, locked. */
export async function lockRunningByDeployments(client: pg.PoolClient, serverId: string, deploymentIds: string[]): Promise<RunningMigration[]> {
  const { rows } = await client.query<RunningMigration>(
    `select id, organization_id, deployment_id, steps, current_step, git_repo_url from migrations
      where deployment_id = any($1::uuid[]) and status = 'processing' and target_server_id = $2 for update`,
    [deploymentIds, serverId],
  );
  return rows;
}

export async function storeProgress(
  client: pg.PoolClient,
  id: string,
  p: { steps: unknown; currentStep: string | null; percent: number; status: string; errorMessage: string | null },
): Promise<void> {
  await client.query("update migrations set steps = $2, current_step = $3, progress_percent = $4, status = $5, error_message = $6, updated_at = now() where id = $1", [
    id,
    JSON.stringify(p.steps),
    p.currentStep,
    p.percent,
    p.status,
    p.errorMessage,
  ]);
}
