// SQL for API keys.
import { KEYS_CHANNEL } from "./key-cache.ts";
import { and, count, eq, isNull, sql, type SQL } from "drizzle-orm";
import { apiKeys, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function createApiKeysRepo(db: Database) {
  const inScope = (scope: Scope): SQL[] => {
    const conds = [eq(apiKeys.organizationId, scope.organizationId)];
    if (scope.projectId) conds.push(eq(apiKeys.projectId, scope.projectId));
    return conds;
  };
  const get = async (scope: Scope, id: string): Promise<ApiKeyRow | undefined> => {
    const [row] = await db.select().from(apiKeys).where(and(eq(apiKeys.id, id), ...inScope(scope)));
    return row;
  };
  return {
    get,
    async insert(values: typeof apiKeys.$inferInsert): Promise<ApiKeyRow> {
      const [row] = await db.insert(apiKeys).values(values).returning();
      return row!;
    },
    async list(scope: Scope, limit: number, after?: CursorPosition) {
      const rows = await db
        .select()
        .from(apiKeys)
        .where(and(...inScope(scope), olderThan(apiKeys.createdAt, apiKeys.id, after)))
        .orderBy(...newestFirst(apiKeys.createdAt, apiKeys.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(apiKeys).where(and(...inScope(scope)));
      return { rows, total: total?.n ?? 0 };
    },
    /** Revokes the key and tells every replica to forget it (their key caches listen on KEYS_CHANNEL). */
    async revoke(scope: Scope, id: string, at: Date): Promise<ApiKeyRow | undefined> {
      const [row] = await db.transaction(async (tx) => {
        const updated = await tx
          .update(apiKeys)
          .set({ revokedAt: at })
          .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt), ...inScope(scope)))
          .returning();
        if (updated[0]) await tx.execute(sql`select pg_notify(${KEYS_CHANNEL}, ${id})`);
        return updated;
      });
      return row ?? (await get(scope, id));
    },
  };
}
export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
