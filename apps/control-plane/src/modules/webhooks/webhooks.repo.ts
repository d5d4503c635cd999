// SQL for webhook subscriptions. Deleted subscriptions are kept (deliveries refer to them) but hidden.
import { and, count, eq, isNotNull, isNull, type SQL } from "drizzle-orm";
import { webhookSubscriptions, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";

export type WebhookRow = typeof webhookSubscriptions.$inferSelect;

export function createWebhooksRepo(db: Database) {
  const visible = (scope: Scope): SQL[] => {
    const conds = [eq(webhookSubscriptions.organizationId, scope.organizationId), isNull(webhookSubscriptions.deletedAt)];
    if (scope.projectId) conds.push(eq(webhookSubscriptions.projectId, scope.projectId));
    return conds;
  };
  return {
    async get(scope: Scope, id: string): Promise<WebhookRow | undefined> {
      const [row] = await db.select().from(webhookSubscriptions).where(and(eq(webhookSubscriptions.id, id), ...visible(scope)));
      return row;
    },
    async list(scope: Scope, limit: number, after?: CursorPosition) {
      const rows = await db
        .select()
        .from(webhookSubscriptions)
        .where(and(...visible(scope), olderThan(webhookSubscriptions.createdAt, webhookSubscriptions.id, after)))
        .orderBy(...newestFirst(webhookSubscriptions.createdAt, webhookSubscriptions.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(webhookSubscriptions).where(and(...visible(scope)));
      return { rows, total: total?.n ?? 0 };
    },
    async insert(values: typeof webhookSubscriptions.$inferInsert): Promise<WebhookRow> {
      const [row] = await db.insert(webhookSubscriptions).values(values).returning();
      return row!;
    },
    /** Subscriptions (deleted ones too) whose secret is still in clear (written before migration 0011). */
    async withClearSecrets(limit: number): Promise<{ id: string; secret: string }[]> {
      const rows = await db
        .select({ id: webhookSubscriptions.id, secret: webhookSubscriptions.secret })
        .from(webhookSubscriptions)
        .where(isNotNull(webhookSubscriptions.secret))
        .limit(limit);
      return rows.map((r) => ({ id: r.id, secret: r.secret! }));
    },
    /** Stores the sealed secret and empties the clear one, unless it changed meanwhile. */
    async moveSecret(id: string, clear: string, sealed: string): Promise<void> {
      await db
        .update(webhookSubscriptions)
        .set({ secret: null, secretEnc: sealed })
        .where(and(eq(webhookSubscriptions.id, id), eq(webhookSubscriptions.secret, clear)));
    },
    async update(scope: Scope, id: string, values: Partial<typeof webhookSubscriptions.$inferInsert>): Promise<WebhookRow | undefined> {
      const [row] = await db.update(webhookSubscriptions).set(values).where(and(eq(webhookSubscriptions.id, id), ...visible(scope))).returning();
      return row;
    },
  };
}
export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
