// SQL for API keys.
import { and, count, eq, isNull, type SQL } from "drizzle-orm";
import { apiKeys, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../lib/keyset.ts";
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
    async revoke(scope: Scope, id: string, at: Date): Promise<ApiKeyRow | undefined> {
      const [row] = await db
        .update(apiKeys)
        .set({ revokedAt: at })
        .where(and(eq(apiKeys.id, id), isNull(apiKeys.revokedAt), ...inScope(scope)))
        .returning();
      return row ?? (await get(scope, id));
    },
  };
}
export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
