// SQL of a migration's backup bytes (record/migrations.repo.ts holds the record's): what the
// organisation's migrations take against its quota, the reservation of a share of it, which
// migrations take an upload now, and the bytes the cleanup job removes.
//
// A reservation is the migration's row itself (uploading or importing with its declared
// size), so it is checked and written in one transaction holding a transaction-level advisory
// lock of the organisation's quota: two upload/inits (or import-urls) of one organisation take
// turns, and the second reads the first's row once it is committed (READ COMMITTED: each
// statement sees what was committed before it began, and the read runs after the lock is
// granted). Without the lock both read the same total and both pass. An advisory lock rather
// than a row lock on the organisation: nothing else waits on it, and it is held for two
// statements only.
import { and, eq, inArray, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import { migrations, type Database } from "@berth/db";
import { appendOrgEvent } from "../../events/event-log.repo.ts";
import { progressEvent, type MigrationPatch, type MigrationRow } from "../record/migrations.repo.ts";

/**
 * Bytes the organisation's migrations other than `exceptId` take in the backup store or are
 * bringing there: each stored backup's size, and the declared size (or the bytes received so
 * far, when larger or none was declared) of each upload or import under way.
 */
const usedBy = (organizationId: string, exceptId: string) =>
  sql`select coalesce(sum(case when storage_key is not null then coalesce(stored_size_bytes, 0)
                               when status in ('uploading', 'importing') then greatest(coalesce(declared_size_bytes, 0), received_bytes)
                               else 0 end), 0)::text as used
        from migrations where organization_id = ${organizationId} and id <> ${exceptId} and bytes_removed_at is null`;

export function createIntakeRepo(db: Database) {
  return {
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

    /** Bytes the organisation's migrations other than `exceptId` take against its quota (usedBy above). */
    async uploadBytesOf(organizationId: string, exceptId: string): Promise<number> {
      const { rows } = await db.execute<{ used: string }>(usedBy(organizationId, exceptId));
      return Number(rows[0]?.used ?? 0);
    },

    /**
     * The reservation of `bytes` of the organisation's `quota` for migration `m`: under the
     * organisation's quota lock, the other migrations' bytes are read and, when `bytes` fit,
     * `patch` (the migration's new upload or import, its declared size) is applied if its
     * status is one of `from`, with its migration_progress event. `row` is undefined when the
     * bytes did not fit (`used`: what the others take) or the status was another.
     */
    async reserve(m: MigrationRow, bytes: number, quota: number, patch: MigrationPatch, from: readonly string[]): Promise<{ used: number; fits: boolean; row: MigrationRow | undefined }> {
      const outcome = await db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`migration_quota:${m.organizationId}`}, 0))`);
        const { rows } = await tx.execute<{ used: string }>(usedBy(m.organizationId, m.id));
        const used = Number(rows[0]?.used ?? 0);
        if (used + bytes > quota) return { used, fits: false, row: undefined };
        const [row] = await tx
          .update(migrations)
          .set({ ...patch, updatedAt: sql`now()` })
          .where(and(eq(migrations.id, m.id), inArray(migrations.status, [...from])))
          .returning();
        return { used, fits: true, row };
      });
      if (outcome.row) await appendOrgEvent(db.$client, outcome.row.organizationId, "migration_progress", progressEvent(outcome.row));
      return outcome;
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
export type IntakeRepo = ReturnType<typeof createIntakeRepo>;
