// SQL of backup records: one row per backup operation, written before the operation so the
// agent's result always finds it (deployment-events.repo.ts completes it).
import { and, count, eq, sql } from "drizzle-orm";
import { backups, deployments, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";

export type BackupRow = typeof backups.$inferSelect;
export interface StoredFile {
  name: string;
  size: number;
  sha256: string;
}

export function createBackupsRepo(db: Database) {
  return {
    async insert(values: typeof backups.$inferInsert): Promise<void> {
      await db.insert(backups).values(values);
    },

    async delete(id: string): Promise<void> {
      await db.delete(backups).where(eq(backups.id, id));
    },

    /** A backup by id alone: for the signed links, whose signature names its organisation. */
    async byId(id: string): Promise<BackupRow | undefined> {
      const [row] = await db.select().from(backups).where(eq(backups.id, id));
      return row;
    },

    /** A backup's status and error, and its operation's status (a cancelled backup operation leaves the record pending). */
    async stateOf(id: string): Promise<{ status: string; errorMessage: string | null; operationStatus: string | null } | undefined> {
      const [row] = await db
        .select({ status: backups.status, errorMessage: backups.errorMessage, operationStatus: deployments.status })
        .from(backups)
        .leftJoin(deployments, eq(deployments.id, backups.deploymentId))
        .where(eq(backups.id, id));
      return row;
    },

    /**
     * Records a file that arrived intact in the backup store (replacing an earlier arrival of
     * the same name); false when the backup is no longer pending.
     */
    async addStoredFile(id: string, file: StoredFile): Promise<boolean> {
      const rows = await db
        .update(backups)
        .set({
          storedFiles: sql`(select coalesce(jsonb_agg(f), '[]'::jsonb) from jsonb_array_elements(${backups.storedFiles}) f where f->>'name' <> ${file.name}) || jsonb_build_array(${JSON.stringify(file)}::jsonb)`,
        })
        .where(and(eq(backups.id, id), eq(backups.status, "pending")))
        .returning({ id: backups.id });
      return rows.length > 0;
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
