// SQL of backup records: one row per backup operation, written before the operation so the
// agent's result always finds it (deployment-events.repo.ts completes it).
import { and, count, eq } from "drizzle-orm";
import { backups, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";

export type BackupRow = typeof backups.$inferSelect;

export function createBackupsRepo(db: Database) {
  return {
    async insert(values: typeof backups.$inferInsert): Promise<void> {
      await db.insert(backups).values(values);
    },

    async delete(id: string): Promise<void> {
      await db.delete(backups).where(eq(backups.id, id));
    },

    /** A backup of the organisation. */
    async get(organizationId: string, id: string): Promise<BackupRow | undefined> {
      const [row] = await db.select().from(backups).where(and(eq(backups.id, id), eq(backups.organizationId, organizationId)));
      return row;
    },

    /** A backup of the environment. */
    async ofEnvironment(environmentId: string, id: string): Promise<BackupRow | undefined> {
      const [row] = await db.select().from(backups).where(and(eq(backups.id, id), eq(backups.environmentId, environmentId)));
      return row;
    },

    async listForEnvironment(environmentId: string, limit: number, after: CursorPosition | undefined) {
      const where = eq(backups.environmentId, environmentId);
      const rows = await db
        .select()
        .from(backups)
        .where(and(where, olderThan(backups.createdAt, backups.id, after)))
        .orderBy(...newestFirst(backups.createdAt, backups.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(backups).where(where);
      return { rows, total: total?.n ?? 0 };
    },
  };
}
export type BackupsRepo = ReturnType<typeof createBackupsRepo>;
