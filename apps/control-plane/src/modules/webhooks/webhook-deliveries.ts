// Outgoing webhook deliveries: the fan-out that turns organisation events into delivery
// rows, the job that POSTs one delivery, and the read/redeliver side of the public API.
//
// Fan-out, exactly once across replicas: org_events rows (written by DB triggers on every
// deployment and environment status change) are read in (tx, id) order past one cursor kept
// in instance_settings, and only below the oldest transaction still running
// (tx < pg_snapshot_xmin(pg_current_snapshot())), so a row committed late by a long
// transaction is never skipped. One transaction holds an advisory xact lock, reads a batch
// (only of organisations with a live subscription, through the (organization_id, tx, id)
// index), inserts the deliveries (unique (subscription_id, event_id)), queues one pg-boss
// job per new delivery in the same transaction and moves the cursor; a crash rolls all of it
// back. When caught up the cursor moves to (xmin, 0), so a new subscription gets events from
// its creation on, not history. Every replica runs it when NOTIFY berth_org_events arrives
// and on a periodic tick; the lock makes them take turns.
//
// Signing (Stripe style): `Berth-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
// "<t>.<raw body>" keyed with the subscription secret (the whole whsec_... string)>`.
// Receivers recompute it over the raw body, compare in constant time and refuse a t older
// than a few minutes (replays). Also sent: Berth-Event (event name), Berth-Delivery
// (delivery id, stable across retries), Content-Type: application/json.
import { isDeployKind } from "../deployments/deployment-state.ts";
import { createHmac } from "node:crypto";
import { and, count, eq, isNull, sql } from "drizzle-orm";
import type pg from "pg";
import { webhookDeliveries, webhookSubscriptions, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec, CursorPosition } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { JobContext, Jobs } from "../../db/jobs.ts";
import { listPage, newestFirst, olderThan, type PageRequest } from "../../db/keyset.ts";
import { listen, type PgListener } from "../../db/pg-listener.ts";
import type { Scope } from "../../lib/scope.ts";
import { EVENTS_CHANNEL } from "../events/event-log.repo.ts";
import type { WebhookEvent } from "./webhook-events.ts";

export const DELIVERY_QUEUE = "webhooks.deliver";
export const FANOUT_CURSOR_KEY = "webhook_fanout_cursor";
const FANOUT_LOCK = 0x62657275; // advisory lock key of the fan-out
const FANOUT_BATCH = 500;
/** Least time between two fan-out passes woken by notifications (webhooks wait at most this much more). */
const FANOUT_MIN_GAP_MS = 200;
const RESPONSE_BODY_LIMIT = 2048;
const DELIVERY_TIMEOUT_MS = 10_000;

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

/** The Berth-Signature header value for a body sent at unix time t. */
export function signatureHeader(secret: string, t: number, body: string): string {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.${body}`).digest("hex")}`;
}

interface OrgEvent {
  id: string;
  organization_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  tx: string;
}

/** Webhook event names an org_events row stands for (none for most rows). */
export function webhookEventsFor(e: Pick<OrgEvent, "type" | "data">): WebhookEvent[] {
  const d = e.data;
  if (e.type === "environment.status") return d.status !== d.previous_status ? ["environment.status_changed"] : [];
  if (e.type !== "deployment.status" || !isDeployKind(String(d.kind)) || d.status === d.previous_status) return [];
  if (d.status === "success") return ["deploy.completed", "deployment.completed"];
  if (d.status === "failed") return ["deploy.failed", "deployment.failed"];
  return [];
}

function payloadData(e: OrgEvent): Record<string, unknown> {
  const d = e.data;
  if (e.type === "environment.status") {
    return { environment: { id: d.environment_id, project_id: d.project_id, status: d.status, previous_status: d.previous_status ?? null } };
  }
  return {
    deployment: {
      id: d.deployment_id,
      project_id: d.project_id,
      environment_id: d.environment_id,
      kind: d.kind,
      version: d.version,
      trigger: d.trigger,
      status: d.status,
      error_message: d.error_message ?? null,
    },
  };
}

const RESERVED = /(^|\.)(example\.(com|net|org)|example|invalid|test)$/i;
/** Hosts that can never be a real receiver (RFC 2606 and 6761 names). */
export function isReservedHost(url: string): boolean {
  try {
    return RESERVED.test(new URL(url).hostname);
  } catch {
    return true;
  }
}

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    subscription_id: d.subscriptionId,
    event_id: d.eventId,
    event_type: d.eventType,
    payload: d.payload as Record<string, unknown>,
    status: d.status as "pending" | "succeeded" | "failed",
    attempts: d.attempts,
    response_status: d.responseStatus,
    response_body: d.responseBody,
    error: d.error,
    created_at: d.createdAt.toISOString(),
    last_attempt_at: d.lastAttemptAt?.toISOString() ?? null,
    delivered_at: d.deliveredAt?.toISOString() ?? null,
  };
}

async function readCapped(res: Response, limit: number): Promise<string> {
  if (!res.body) return "";
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).toString("utf8").slice(0, limit);
}

export function createWebhookDeliveries(deps: { db: Database; cursors: CursorCodec; clock: Clock }) {
  let jobs: Jobs | null = null;
  let pool: pg.Pool | null = null;

  /** One fan-out batch in one transaction; returns how many events it consumed. */
  async function fanOutBatch(): Promise<number> {
    const client = await pool!.connect();
    let queued = 0;
    try {
      await client.query("begin");
      await client.query("select pg_advisory_xact_lock($1)", [FANOUT_LOCK]);
      // Every transaction below this id has ended: rows with a smaller tx can no longer appear.
      const { rows: snap } = await client.query<{ xmin: string }>("select pg_snapshot_xmin(pg_current_snapshot())::text as xmin");
      const xmin = snap[0]!.xmin;
      const caughtUp = { tx: xmin, id: "0" };
      const { rows: cur } = await client.query<{ value: { tx: string; id: string } }>("select value from instance_settings where key = $1", [FANOUT_CURSOR_KEY]);
      const cursor = cur[0]?.value;
      if (!cursor) {
        // First run on this database: start from now; older events are history, not news.
        await client.query("insert into instance_settings (key, value) values ($1, $2) on conflict (key) do nothing", [FANOUT_CURSOR_KEY, JSON.stringify(caughtUp)]);
        await client.query("commit");
        return 0;
      }
      // Only organisations with a live subscription are read, through (organization_id, tx, id).
      const { rows: subRows } = await client.query<{ id: string; organization_id: string; project_id: string | null; events: string[] }>(
        "select id, organization_id, project_id, events from webhook_subscriptions where enabled and deleted_at is null order by created_at, id",
      );
      const subsByOrg = new Map<string, typeof subRows>();
      for (const r of subRows) subsByOrg.set(r.organization_id, [...(subsByOrg.get(r.organization_id) ?? []), r]);
      const { rows: events } =
        subsByOrg.size === 0
          ? { rows: [] as OrgEvent[] }
          : await client.query<OrgEvent>(
              `select id::text, organization_id, type, data, created_at, tx::text from org_events
               where organization_id = any($4::uuid[]) and (tx, id) > ($1::xid8, $2::bigint) and tx < $3::xid8
                 and type in ('deployment.status', 'environment.status')
               order by tx, id limit $5`,
              [cursor.tx, cursor.id, xmin, [...subsByOrg.keys()], FANOUT_BATCH],
            );
      for (const e of events) {
        const names = webhookEventsFor(e);
        for (const sub of subsByOrg.get(e.organization_id) ?? []) {
          if (sub.project_id && sub.project_id !== e.data.project_id) continue;
          for (const name of names) {
            if (!sub.events.includes(name)) continue;
            const eventId = `evt_${e.id}:${name}`;
            const payload = { id: `evt_${e.id}`, type: name, created_at: e.created_at.toISOString(), organization_id: e.organization_id, data: payloadData(e) };
            const { rows: inserted } = await client.query<{ id: string }>(
              `insert into webhook_deliveries (organization_id, subscription_id, event_id, event_type, payload, created_at)
               values ($1, $2, $3, $4, $5, $6) on conflict (subscription_id, event_id) do nothing returning id`,
              [e.organization_id, sub.id, eventId, name, JSON.stringify(payload), deps.clock.now()],
            );
            if (inserted[0]) {
              await jobs!.send(DELIVERY_QUEUE, { deliveryId: inserted[0].id }, { db: client });
              queued++;
            }
          }
        }
      }
      // A full batch: continue after its last row. Otherwise everything before xmin is done,
      // also for organisations without subscriptions, so a new subscription starts from now.
      const last = events[events.length - 1];
      const next = events.length === FANOUT_BATCH && last ? { tx: last.tx, id: last.id } : caughtUp;
      await client.query("update instance_settings set value = $2 where key = $1", [FANOUT_CURSOR_KEY, JSON.stringify(next)]);
      await client.query("commit");
      if (queued > 0) jobs!.wake();
      return events.length;
    } catch (err) {
      await client.query("rollback").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  let running: Promise<void> | null = null;
  let again = false;
  /** Runs the fan-out until caught up; calls made meanwhile fold into one more pass. */
  function fanOut(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          while ((await fanOutBatch()) === FANOUT_BATCH);
          // Every organisation event wakes the fan-out, server figures included (hundreds a
          // second with thousands of agents): passes are spaced so that costs little.
          if (again) await new Promise((resolve) => setTimeout(resolve, FANOUT_MIN_GAP_MS));
        } while (again);
      } finally {
        running = null;
      }
    })();
    return running;
  }

  /** The job: one POST of one delivery; throws on a non-2xx answer so the job is retried. */
  async function deliver(data: { deliveryId: string }, ctx: JobContext): Promise<void> {
    const [found] = await deps.db
      .select({ d: webhookDeliveries, s: webhookSubscriptions })
      .from(webhookDeliveries)
      .innerJoin(webhookSubscriptions, eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId))
      .where(eq(webhookDeliveries.id, data.deliveryId));
    if (!found || found.d.status === "succeeded") return;
    const { d, s } = found;
    const record = (values: Partial<typeof webhookDeliveries.$inferInsert>) => deps.db.update(webhookDeliveries).set(values).where(eq(webhookDeliveries.id, d.id));
    if (s.deletedAt || !s.enabled) {
      await record({ status: "failed", error: s.deletedAt ? "The subscription was deleted" : "The subscription is disabled" });
      return;
    }
    if (isReservedHost(s.url)) {
      // Documentation and test names (RFC 2606, 6761) never reach a receiver: no lookup, no retries.
      await record({ status: "failed", attempts: d.attempts + 1, lastAttemptAt: deps.clock.now(), error: "The URL's host is a reserved example/test name; nothing was sent" });
      return;
    }
    const body = JSON.stringify(d.payload);
    const now = deps.clock.now();
    const t = Math.floor(now.getTime() / 1000);
    let status: number | null = null;
    let responseBody: string | null = null;
    let error: string | null = null;
    try {
      const res = await fetch(s.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "user-agent": "Berth-Webhooks/1",
          "berth-event": d.eventType,
          "berth-delivery": d.id,
          "berth-signature": signatureHeader(s.secret, t, body),
        },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      status = res.status;
      responseBody = await readCapped(res, RESPONSE_BODY_LIMIT);
      if (status < 200 || status > 299) error = `The receiver answered HTTP ${status}`;
    } catch (err) {
      error = `Request failed: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`;
    }
    const ok = error === null;
    await deps.db
      .update(webhookDeliveries)
      .set({
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        responseStatus: status,
        responseBody,
        error,
        lastAttemptAt: now,
        status: ok ? "succeeded" : ctx.lastAttempt ? "failed" : "pending",
        ...(ok ? { deliveredAt: now } : {}),
      })
      .where(eq(webhookDeliveries.id, d.id));
    if (!ok) throw new Error(error!);
  }

  async function subscriptionIn(scope: Scope, subscriptionId: string) {
    const conds = [eq(webhookSubscriptions.id, subscriptionId), eq(webhookSubscriptions.organizationId, scope.organizationId), isNull(webhookSubscriptions.deletedAt)];
    if (scope.projectId) conds.push(eq(webhookSubscriptions.projectId, scope.projectId));
    const [sub] = await deps.db.select({ id: webhookSubscriptions.id }).from(webhookSubscriptions).where(and(...conds));
    if (!sub) throw notFound("Webhook");
    return sub;
  }

  let listener: PgListener | null = null;
  let tick: NodeJS.Timeout | null = null;

  return {
    fanOut,
    deliver,

    /** Starts delivering: the queue's worker, the NOTIFY listener and the periodic tick. */
    async start(j: Jobs, opts: { pool: pg.Pool; tickMs?: number; onError: (err: unknown) => void }) {
      jobs = j;
      pool = opts.pool;
      await j.define<{ deliveryId: string }>(DELIVERY_QUEUE, deliver);
      await fanOut();
      const run = () => void fanOut().catch(opts.onError);
      listener = await listen(opts.pool, [EVENTS_CHANNEL], run, (msg, err) => opts.onError(err ?? new Error(msg)));
      tick = setInterval(run, opts.tickMs ?? 15_000);
      tick.unref();
    },

    async stop() {
      if (tick) clearInterval(tick);
      await listener?.close();
      await running?.catch(() => {});
    },

    async list(scope: Scope, subscriptionId: string, page: PageRequest) {
      const sub = await subscriptionIn(scope, subscriptionId);
      return listPage(
        deps.cursors,
        `webhook_deliveries:${sub.id}`,
        page,
        async (limit: number, after: CursorPosition | undefined) => {
          const rows = await deps.db
            .select()
            .from(webhookDeliveries)
            .where(and(eq(webhookDeliveries.subscriptionId, sub.id), olderThan(webhookDeliveries.createdAt, webhookDeliveries.id, after)))
            .orderBy(...newestFirst(webhookDeliveries.createdAt, webhookDeliveries.id))
            .limit(limit + 1);
          const [total] = await deps.db.select({ n: count() }).from(webhookDeliveries).where(eq(webhookDeliveries.subscriptionId, sub.id));
          return { rows, total: total?.n ?? 0 };
        },
        deliveryView,
      );
    },

    /** Sends a delivery again (any status), with a fresh series of tries. */
    async redeliver(scope: Scope, subscriptionId: string, deliveryId: string) {
      const sub = await subscriptionIn(scope, subscriptionId);
      if (!jobs) throw new DomainError("jobs_unavailable", "Background jobs are not running on this server; try again shortly");
      const [row] = await deps.db
        .update(webhookDeliveries)
        .set({ status: "pending", error: null })
        .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.subscriptionId, sub.id)))
        .returning();
      if (!row) throw notFound("Delivery");
      await jobs.send(DELIVERY_QUEUE, { deliveryId: row.id });
      return deliveryView(row);
    },
  };
}
export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
