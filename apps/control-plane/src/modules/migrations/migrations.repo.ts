// SQL of migration records (platform spec 2.5): one row per migration, its upload and its
// analysis; every change of state is followed by its migration_progress event (written right
// after the row: a crash in between loses that one event, never the state, which GET shows).
import { and, count, desc, eq, inArray, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import type pg from "pg";
import { deployments, migrations, type Database } from "@berth/db";
import { appendOrgEvent } from "../events/event-log.repo.ts";

export type MigrationRow = typeof migrations.$inferSelect;
export type MigrationPatch = Partial<Omit<typeof migrations.$inferInsert, "id" | "organizationId" | "createdAt">>;

/** The data of a migration_progress event (platform spec 6), plus upload byte counts when an upload or import is under way. */
export function progressEvent(row: MigrationRow): Record<string, unknown> {
  return {
    migration_id: row.id,
    status: row.status,
    progress_percent: row.progressPercent,
    current_step: row.currentStep,
    error_message: row.errorMessage,
    ...(row.status === "uploading" || row.status === "importing" ? { bytes_received: row.receivedBytes, bytes_total: row.declaredSizeBytes } : {}),
  };
}

export function createMigrationsRepo(db: Database) {
  return {
    async insert(values: typeof migrations.$inferInsert): Promise<MigrationRow> {
      const [row] = await db.insert(migrations).values(values).returning();
      await appendOrgEvent(db.$client, row!.organizationId, "migration_progress", progressEvent(row!));
      return row!;
    },

    async get(organizationId: string, id: string): Promise<MigrationRow | undefined> {
      const [row] = await db.select().from(migrations).where(and(eq(migrations.id, id), eq(migrations.organizationId, organizationId)));
      return row;
    },

    /** A migration by id alone: for background jobs, whose payload came from a scoped request. */
    async byId(id: string): Promise<MigrationRow | undefined> {
      const [row] = await db.select().from(migrations).where(eq(migrations.id, id));
      return row;
    },

    async list(organizationId: string, opts: { status?: string | undefined; limit: number; offset: number }) {
      const where = and(eq(migrations.organizationId, organizationId), opts.status ? eq(migrations.status, opts.status) : undefined);
      const rows = await db.select().from(migrations).where(where).orderBy(desc(migrations.createdAt), desc(migrations.id)).limit(opts.limit).offset(opts.offset);
      const [total] = await db.select({ n: count() }).from(migrations).where(where);
      return { rows, total: total?.n ?? 0 };
    },

    /**
     * Applies `patch` when the row's status is one of `from` (any status when omitted) and
     * writes the migration_progress event with it; undefined when the row is not there or in
     * another status. `event: false` for changes no one watches (byte counters are events too).
     */
    async update(id: string, patch: MigrationPatch, opts: { from?: readonly string[]; event?: boolean } = {}): Promise<MigrationRow | undefined> {
      const [row] = await db
        .update(migrations)
        .set({ ...patch, updatedAt: sql`now()` })
        .where(and(eq(migrations.id, id), opts.from ? inArray(migrations.status, [...opts.from]) : undefined))
        .returning();
      if (row && opts.event !== false) await appendOrgEvent(db.$client, row.organizationId, "migration_progress", progressEvent(row));
      return row;
    },

    async delete(id: string): Promise<void> {
      await db.delete(migrations).where(eq(migrations.id, id));
    },

    /**
     * Cancelled migrations, and failed ones last changed before `failedBefore`, that still
     * have bytes somewhere (the store, or an unfinished upload): what the cleanup job removes.
     */
    async withBytesToRemove(failedBefore: Date, limit = 100): Promise<MigrationRow[]> {
      return db
        .select()
        .from(migrations)
        .where(
          and(
            isNull(migrations.bytesRemovedAt),
            or(isNotNull(migrations.storageKey), isNotNull(migrations.uploadId), isNotNull(migrations.importUrl)),
            or(eq(migrations.status, "cancelled"), and(eq(migrations.status, "failed"), lt(migrations.updatedAt, failedBefore))),
          ),
        )
        .limit(limit);
    },

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

    /**
     * Bytes the organisation's migrations other than `exceptId` take in the backup store or
     * are bringing there: each stored backup's size, and the declared size (or the bytes
     * received so far, when larger or none was declared) of each upload or import under way.
     */
    async uploadBytesOf(organizationId: string, exceptId: string): Promise<number> {
      const { rows } = await db.$client.query<{ used: string }>(
        `select coalesce(sum(case when storage_key is not null then coalesce(stored_size_bytes, 0)
                                  when status in ('uploading', 'importing') then greatest(coalesce(declared_size_bytes, 0), received_bytes)
                                  else 0 end), 0)::text as used
           from migrations where organization_id = $1 and id <> $2 and bytes_removed_at is null`,
        [organizationId, exceptId],
      );
      return Number(rows[0]?.used ?? 0);
    },

    /** Ids of the organisation's migrations taking an upload now. */
    async uploadingIds(organizationId: string): Promise<string[]> {
      const rows = await db.select({ id: migrations.id }).from(migrations).where(and(eq(migrations.organizationId, organizationId), eq(migrations.status, "uploading")));
      return rows.map((r) => r.id);
    },

    async markBytesRemoved(id: string): Promise<void> {
      await db.update(migrations).set({ bytesRemovedAt: sql`now()`, storageKey: null, storage: null, uploadId: null }).where(eq(migrations.id, id));
    },
  };
}
export type MigrationsRepo = ReturnType<typeof createMigrationsRepo>;

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
