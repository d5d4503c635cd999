// SQL of a migration's backup bytes (record/migrations.repo.ts holds the record's): what the
// organisation's migrations take against its quota, which migrations take an upload now, and
// the bytes the cleanup job removes.
import { and, eq, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import { migrations, type Database } from "@berth/db";
import type { MigrationRow } from "../record/migrations.repo.ts";

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
export type IntakeRepo = ReturnType<typeof createIntakeRepo>;
