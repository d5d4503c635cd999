// Outgoing webhook deliveries as a whole: starting and stopping the background side (the
// fan-out of organisation events into deliveries, webhook-fanout.ts, and the job that sends
// one delivery, webhook-sender.ts), and the read/redeliver side of the public API.
import type { EnvironmentAddresses } from "../environments/domains.ts";
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Jobs } from "../../db/jobs.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import { listen, type PgListener } from "../../db/pg-listener.ts";
import { repeat, type Repeating } from "../../lib/repeat.ts";
import type { Scope } from "../../lib/scope.ts";
import { EVENTS_CHANNEL } from "../events/event-log.repo.ts";
import type { DeliveryRow, WebhookDeliveriesRepo } from "./webhook-deliveries.repo.ts";
import { createFanOut, type FanOut } from "./webhook-fanout.ts";
import { createDeliverySender, DELIVERY_QUEUE } from "./webhook-sender.ts";
import type { RequestGuard } from "../../lib/outbound/request-guard.ts";
import type { WebhooksRepo } from "./webhooks.repo.ts";
import type { WebhookEvent } from "./webhook-events.ts";

export function deliveryView(d: DeliveryRow) {
  return {
    id: d.id,
    subscription_id: d.subscriptionId,
    event_id: d.eventId,
    event_type: d.eventType as WebhookEvent,
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

export function createWebhookDeliveries(deps: {
  repo: WebhookDeliveriesRepo;
  webhooks: Pick<WebhooksRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
  outbound: Pick<RequestGuard, "request">;
  masterKey: Buffer;
  /** For the URL of the environment a delivery is about. */
  addresses: Pick<EnvironmentAddresses, "url">;
}) {
  const deliver = createDeliverySender({ repo: deps.repo, clock: deps.clock, outbound: deps.outbound, masterKey: deps.masterKey });
  let jobs: Jobs | null = null;
  let fanout: FanOut | null = null;
  let listener: PgListener | null = null;
  let tick: Repeating | null = null;

  /** The subscription, if the caller may see it (deleted ones are gone). */
  async function subscriptionIn(scope: Scope, subscriptionId: string) {
    const sub = await deps.webhooks.get(scope, subscriptionId);
    if (!sub) throw notFound("Webhook");
    return sub;
  }

  return {
    /** Runs the fan-out until caught up (once started). */
    fanOut(): Promise<void> {
      if (!fanout) return Promise.reject(new Error("webhook deliveries are not started"));
      return fanout.run();
    },
    deliver,

    /** Starts delivering: the queue's worker, the NOTIFY listener and the periodic tick. */
    async start(j: Jobs, opts: { pool: pg.Pool; tickMs?: number; onError: (err: unknown) => void }) {
      jobs = j;
      const f = createFanOut({ pool: opts.pool, jobs: j, clock: deps.clock, addresses: deps.addresses });
      fanout = f;
      await j.define<{ deliveryId: string }>(DELIVERY_QUEUE, deliver);
      await f.run();
      listener = await listen(opts.pool, [EVENTS_CHANNEL], () => void f.run().catch(opts.onError), (msg, err) => opts.onError(err ?? new Error(msg)));
      // Each tick waits for the fan-out it started, so ticks never pile up behind a slow database.
      tick = repeat(() => f.run(), { everyMs: opts.tickMs ?? 15_000, onError: opts.onError });
    },

    async stop() {
      tick?.stop();
      await listener?.close();
      await fanout?.settled();
    },

    async list(scope: Scope, subscriptionId: string, page: PageRequest) {
      const sub = await subscriptionIn(scope, subscriptionId);
      return listPage(deps.cursors, `webhook_deliveries:${sub.id}`, page, (limit, after) => deps.repo.listForSubscription(sub.id, limit, after), deliveryView);
    },

    /** Sends a delivery again (any status), with a fresh series of tries. */
    async redeliver(scope: Scope, subscriptionId: string, deliveryId: string) {
      const sub = await subscriptionIn(scope, subscriptionId);
      if (!jobs) throw new DomainError("jobs_unavailable", "Background jobs are not running on this server; try again shortly");
      const row = await deps.repo.resetToPending(sub.id, deliveryId);
      if (!row) throw notFound("Delivery");
      await jobs.send(DELIVERY_QUEUE, { deliveryId: row.id });
      return deliveryView(row);
    },
  };
}
export type WebhookDeliveries = ReturnType<typeof createWebhookDeliveries>;
