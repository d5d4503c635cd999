// SQL of outgoing webhook deliveries: the fan-out's reads and writes inside its one
// transaction (a client of webhook-fanout.ts, which holds the rules), and the delivery rows
// the sender and the public API read and update. Decides nothing.
import { and, count, eq, sql } from "drizzle-orm";
import type pg from "pg";
import { webhookDeliveries, webhookSubscriptions, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type DeliveryUpdate = Partial<typeof webhookDeliveries.$inferInsert>;

/** The instance_settings key of the fan-out's cursor. */
export const FANOUT_CURSOR_KEY = "webhook_fanout_cursor";
const FANOUT_LOCK = 0x62657275; // advisory lock key of the fan-out

type Queryable = Pick<pg.PoolClient, "query">;

/** A position in org_events: (tx, id) as PostgreSQL's text. */
export interface FanOutCursor {
  tx: string;
  id: string;
}

/** An org_events row as the fan-out reads it. */
export interface OrgEventRow {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  tx: string;
}

export interface LiveSubscription {
  id: string;
  organization_id: string;
  project_id: string | null;
  events: string[];
}

export interface NewDelivery {
  organizationId: string;
  subscriptionId: string;
  eventId: string;
  eventType: string;
  payload: Record<string, unknown>;
}

// ---- The fan-out, on the client of its transaction ----

/** What an environment's URL is made of, for the environments a batch names. */
export async function environmentNames(client: Queryable, ids: string[]): Promise<{ id: string; name: string; domain: string | null }[]> {
  if (ids.length === 0) return [];
  const { rows } = await client.query<{ id: string; name: string; domain: string | null }>("select id, name, domain from environments where id = any($1::uuid[])", [ids]);
  return rows;
}

/** The module tests of these deployments that ran them (deployments.tests_result), by deployment id. */
export async function deploymentTests(client: Queryable, ids: string[]): Promise<Map<string, unknown>> {
  if (ids.length === 0) return new Map();
  const { rows } = await client.query<{ id: string; tests_result: unknown }>(
    "select id, tests_result from deployments where id = any($1::uuid[]) and tests_result is not null",
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.tests_result]));
}

/** Makes replicas take turns: held until the transaction ends. */
export async function lockFanOut(client: Queryable): Promise<void> {
  await client.query("select pg_advisory_xact_lock($1)", [FANOUT_LOCK]);
}

/** The oldest transaction still running: every transaction below it has ended. */
export async function snapshotXmin(client: Queryable): Promise<string> {
  const { rows } = await client.query<{ xmin: string }>("select pg_snapshot_xmin(pg_current_snapshot())::text as xmin");
  return rows[0]!.xmin;
}

export async function fanOutCursor(client: Queryable): Promise<FanOutCursor | undefined> {
  const { rows } = await client.query<{ value: FanOutCursor }>("select value from instance_settings where key = $1", [FANOUT_CURSOR_KEY]);
  return rows[0]?.value;
}

/** Creates the cursor unless another replica did. */
export async function createFanOutCursor(client: Queryable, at: FanOutCursor): Promise<void> {
  await client.query("insert into instance_settings (key, value) values ($1, $2) on conflict (key) do nothing", [FANOUT_CURSOR_KEY, JSON.stringify(at)]);
}

export async function saveFanOutCursor(client: Queryable, at: FanOutCursor): Promise<void> {
  await client.query("update instance_settings set value = $2 where key = $1", [FANOUT_CURSOR_KEY, JSON.stringify(at)]);
}

/** Enabled, not deleted subscriptions, oldest first. */
export async function liveSubscriptions(client: Queryable): Promise<LiveSubscription[]> {
  const { rows } = await client.query<LiveSubscription>(
    "select id, organization_id, project_id, events from webhook_subscriptions where enabled and deleted_at is null order by created_at, id",
  );
  return rows;
}

/** The next org_events of these organisations and types after `after`, below `below` (an xmin), in (tx, id) order. */
export async function orgEventsAfter(
  client: Queryable,
  q: { after: FanOutCursor; below: string; organizationIds: string[]; types: readonly string[]; limit: number },
): Promise<OrgEventRow[]> {
  if (q.organizationIds.length === 0) return [];
  const { rows } = await client.query<OrgEventRow>(
    `select id::text, organization_id, type, data, created_at, tx::text from org_events
     where organization_id = any($4::uuid[]) and (tx, id) > ($1::xid8, $2::bigint) and tx < $3::xid8
       and type = any($6::text[])
     order by tx, id limit $5`,
    [q.after.tx, q.after.id, q.below, q.organizationIds, q.limit, [...q.types]],
  );
  return rows;
}

/** Inserts a delivery unless the subscription already has one for the event; the new row's id, if any. */
export async function insertDelivery(client: Queryable, d: NewDelivery, at: Date): Promise<string | undefined> {
  const { rows } = await client.query<{ id: string }>(
    `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type, payload, created_at)
     values ($1, $2, $3, $4, $5, $6) on conflict (subscription_id, event_id) do nothing returning id`,
    [d.organizationId, d.subscriptionId, d.eventId, d.eventType, JSON.stringify(d.payload), at],
  );
  return rows[0]?.id;
}

// ---- Delivery rows ----

export function createWebhookDeliveriesRepo(db: Database) {
  return {
    /** A delivery with its subscription (deleted or disabled ones included). */
    async withSubscription(id: string) {
      const [found] = await db
        .select({ d: webhookDeliveries, s: webhookSubscriptions })
        .from(webhookDeliveries)
        .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
        .where(eq(webhookDeliveries.id, id));
      return found;
    },

    async update(id: string, values: DeliveryUpdate): Promise<void> {
      await db.update(webhookDeliveries).set(values).where(eq(webhookDeliveries.id, id));
    },

    /** Records one try: its outcome, and one more attempt counted. */
    async recordAttempt(id: string, values: Omit<DeliveryUpdate, "attempts">): Promise<void> {
      await db
        .update(webhookDeliveries)
        .set({ ...values, attempts: sql`${webhookDeliveries.attempts} + 1` })
        .where(eq(webhookDeliveries.id, id));
    },

    async listForSubscription(subscriptionId: string, limit: number, after: CursorPosition | undefined) {
      const rows = await db
        .select()
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.subscriptionId, subscriptionId), olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, after)))
        .orderBy(...newestFirst(webhookDeliveries.createdAt, webhookDeliveries.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, subscriptionId));
      return { rows, total: total?.n ?? 0 };
    },

    /** Sets a delivery of the subscription back to pending; undefined when there is no such delivery. */
    async resetToPending(subscriptionId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
      const [row] = await db
        .update(webhookDeliveries)
        .set({ status: "pending", error: null })
        .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.subscriptionId, subscriptionId)))
        .returning();
      return row;
    },
  };
}
export type WebhookDeliveriesRepo = ReturnType<typeof createWebhookDeliveriesRepo>;
