// SQL of migration records (platform spec 2.5): one row per migration, its upload and its
// analysis; every change of state is followed by its migration_progress event (written right
// after the row: a crash in between loses that one event, never the state, which GET shows).
// The SQL of the upload's bytes is intake.repo.ts'; of the run, execution.repo.ts'.
import { and, asc, count, desc, eq, gt, inArray, sql } from "drizzle-orm";
import { migrations, type Database } from "@berth/db";
import { appendOrgEvent } from "../../events/event-log.repo.ts";

export type MigrationRow = typeof migrations.$inferSelect;
export type MigrationPatch = Partial<Omit<typeof migrations.$inferInsert, "id" | "organizationId" | "createdAt">>;

/** A repository URL still holding its userinfo in clear (http(s)://user:token@…, written before migration 0024 sealed it). */
const CLEAR_USERINFO = "^https?://[^/?#]*@";

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

    /** Up to `limit` migrations after id `after` (in id order) whose git_repo_url still carries its userinfo in clear. */
    async withClearCredentials(after: string, limit: number): Promise<{ id: string; gitRepoUrl: string }[]> {
      const rows = await db
        .select({ id: migrations.id, gitRepoUrl: migrations.gitRepoUrl })
        .from(migrations)
        .where(and(gt(migrations.id, after), sql`${migrations.gitRepoUrl} ~* ${CLEAR_USERINFO}`))
        .orderBy(asc(migrations.id))
        .limit(limit);
      return rows.map((r) => ({ id: r.id, gitRepoUrl: r.gitRepoUrl! }));
    },

    /**
     * Replaces a clear URL by its bare form and sealed userinfo, unless the URL changed
     * meanwhile (a configure, or another replica sealing it first): true when this one did.
     * `sealed` undefined (an empty userinfo): the sealed column is left as it is.
     */
    async moveCredentials(id: string, clearUrl: string, url: string, sealed: string | undefined): Promise<boolean> {
      const rows = await db
        .update(migrations)
        .set({ gitRepoUrl: url, ...(sealed === undefined ? {} : { gitRepoCredentialsEnc: sealed }) })
        .where(and(eq(migrations.id, id), eq(migrations.gitRepoUrl, clearUrl)))
        .returning({ id: migrations.id });
      return rows.length > 0;
    },
  };
}
export type MigrationsRepo = ReturnType<typeof createMigrationsRepo>;
