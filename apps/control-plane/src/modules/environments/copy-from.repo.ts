// SQL of copy-from (copy-from.ts): which backup of the source "latest" means.
import { and, desc, eq, isNotNull, ne, sql } from "drizzle-orm";
import { backups, type Database } from "@berth/db";
import { PRE_DEPLOY } from "../backups/backups.service.ts";

/** The source's most recent completed backup whose files are all in the store (pre-deploy snapshots never are). */
export function latestStoredBackup(db: Database) {
  return async (environmentId: string): Promise<{ id: string; createdAt: Date } | undefined> => {
    const [row] = await db
      .select({ id: backups.id, createdAt: backups.createdAt })
      .from(backups)
      .where(
        and(
          eq(backups.environmentId, environmentId),
          eq(backups.status, "completed"),
          ne(backups.backupType, PRE_DEPLOY),
          isNotNull(backups.storageKey),
          sql`jsonb_array_length(${backups.storedFiles}) > 0`,
        ),
      )
      .orderBy(desc(backups.createdAt), desc(backups.id))
      .limit(1);
    return row;
  };
}
