// SQL for API keys.
import { KEYS_CHANNEL } from "./key-cache.ts";
import { and, count, eq, isNull, sql, type SQL } from "drizzle-orm";
import { apiKeys, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import { coalesce } from "../../db/coalesce.ts";
import type { Scope } from "../../lib/scope.ts";
import type { KeyAccess } from "./api-key-format.ts";

export type ApiKeyRow = typeof apiKeys.$inferSelect;

// The public API's hot path: a named statement, parsed once per connection, for the keys
// asked for together (db/coalesce.ts: when many keys' cache entries run out at once, their
// lookups take one connection, not one each).
const LOOKUP = `
select k.key_hash, k.id, k.organization_id, k.project_id, k.access, k.revoked_at is not null as revoked, o.plan
from api_keys k join organizations o on o.id = k.organization_id
where k.key_hash = any($1::text[])`;

// last_used_at of the keys a replica saw used (key-touches.ts gathers them): one statement
// per batch, on the relaxed pool (the column is informative: a database crash may lose the
// last moments of it at no cost). Rows are locked in id order, the same on every replica, so
// two replicas' batches never deadlock; the time never goes backwards.
const TOUCH = `
with v as (select id, at from unnest($1::uuid[], $2::timestamptz[]) as v(id, at)),
locked as (select k.id from api_keys k join v on v.id = k.id order by k.id for update of k)
update api_keys k set last_used_at = greatest(k.last_used_at, v.at)
from v join locked on locked.id = v.id where k.id = v.id`;

export interface KeyLookupRow {
  id: string;
  organization_id: string;
  project_id: string | null;
  access: KeyAccess;
  revoked: boolean;
  plan: string;
}


/** `relaxed`: the pool whose commits do not wait for the disk (db/relaxed-pool.ts), for touches. */
export function createApiKeysRepo(db: Database, relaxed: Database = db) {
  const inScope = (scope: Scope): SQL[] => {
    const conds = [eq(apiKeys.organizationId, scope.organizationId)];
    if (scope.projectId) conds.push(eq(apiKeys.projectId, scope.projectId));
    return conds;
  };
  const get = async (scope: Scope, id: string): Promise<ApiKeyRow | undefined> => {
    const [row] = await db.select().from(apiKeys).where(and(eq(apiKeys.id, id), ...inScope(scope)));
    return row;
  };
  const lookup = coalesce(
    async (hashes: string[]): Promise<(KeyLookupRow | undefined)[]> => {
      const { rows } = await db.$client.query<KeyLookupRow & { key_hash?: string }>({ name: "berth_api_key_lookup", text: LOOKUP, values: [hashes] });
      const byHash = new Map<string, KeyLookupRow>();
      for (const { key_hash, ...row } of rows) byHash.set(key_hash!, row);
      return hashes.map((h) => byHash.get(h));
    },
    { max: 500, idOf: (hash) => hash },
  );
  return {
    get,
    /** A key by its hash, with its organisation's plan, for authentication. */
    authLookup: (hash: string): Promise<KeyLookupRow | undefined> => lookup(hash),
    /** A key by id, for what it was issued (a stream ticket): undefined when unknown. */
    async byIdForTicket(id: string): Promise<Omit<KeyLookupRow, "access"> | undefined> {
      const { rows } = await db.$client.query<Omit<KeyLookupRow, "access">>(
        `select k.id, k.organization_id, k.project_id, k.revoked_at is not null as revoked, o.plan
         from api_keys k join organizations o on o.id = k.organization_id where k.id = $1`,
        [id],
      );
      return rows[0];
    },
    /** Sets last_used_at of each key (never backwards), in one statement; a key appears once. */
    async touchMany(batch: { id: string; at: Date }[]): Promise<void> {
      await relaxed.$client.query({ name: "berth_api_key_touch", text: TOUCH, values: [batch.map((t) => t.id), batch.map((t) => t.at)] });
    },
    /**
     * Inserts the key unless its organisation already holds `limit` active (unrevoked) keys:
     * the row, or null. Creations in one organisation take turns (a transaction lock), so
     * concurrent ones cannot pass the limit together.
     */
    async insertWithinLimit(values: typeof apiKeys.$inferInsert, limit: number): Promise<ApiKeyRow | null> {
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${"api_keys:" + values.organizationId}, 0))`);
        const [active] = await tx.select({ n: count() }).from(apiKeys).where(and(eq(apiKeys.organizationId, values.organizationId), isNull(apiKeys.revokedAt)));
        if ((active?.n ?? 0) >= limit) return null;
        const [row] = await tx.insert(apiKeys).values(values).returning();
        return row!;
      });
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
    /** Revokes every live key the user created in the organisation, told to every replica like revoke; their ids. */
    async revokeCreatedBy(organizationId: string, userId: string, at: Date): Promise<string[]> {
      return db.transaction(async (tx) => {
        const rows = await tx
          .update(apiKeys)
          .set({ revokedAt: at })
          .where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.createdBy, userId), isNull(apiKeys.revokedAt)))
          .returning({ id: apiKeys.id });
        const ids = rows.map((r) => r.id);
        if (ids.length > 0) await tx.execute(sql`select pg_notify(${KEYS_CHANNEL}, id) from unnest(${sql.param(ids)}::text[]) as id`);
        return ids;
      });
    },
  };
}
export type ApiKeysRepo = ReturnType<typeof createApiKeysRepo>;
