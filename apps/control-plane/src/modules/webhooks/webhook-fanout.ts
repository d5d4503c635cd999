// The fan-out that turns organisation events into delivery rows, exactly once across
// replicas. org_events rows (written by DB triggers on every deployment and environment
// status change) are read in (tx, id) order past one cursor kept in instance_settings, and
// only below the oldest transaction still running (tx < pg_snapshot_xmin(pg_current_snapshot())),
// so a row committed late by a long transaction is never skipped. One transaction holds an
// advisory xact lock, reads a batch (only of organisations with a live subscription, through
// the (organization_id, tx, id) index), inserts the deliveries (unique (subscription_id,
// event_id)), queues one pg-boss job per new delivery in the same transaction and moves the
// cursor; a crash rolls all of it back. When caught up the cursor moves to (xmin, 0), so a
// new subscription gets events from its creation on, not history. Every replica runs it when
// NOTIFY berth_org_events arrives and on a periodic tick; the lock makes them take turns.
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import type { Jobs } from "../../db/jobs.ts";
import { inTransaction } from "../../db/transaction.ts";
import {
  createFanOutCursor,
  deploymentTests,
  environmentNames,
  fanOutCursor,
  insertDelivery,
  liveSubscriptions,
  lockFanOut,
  orgEventsAfter,
  saveFanOutCursor,
  snapshotXmin,
} from "./webhook-deliveries.repo.ts";
import { deliveriesFor, FANOUT_EVENT_TYPES, nextCursor, subscriptionsByOrganization } from "./webhook-payload.ts";
import type { EnvironmentAddresses } from "../environments/domains.ts";
import { DELIVERY_QUEUE } from "./webhook-sender.ts";

const FANOUT_BATCH = 500;
/** Least time between two fan-out passes woken by notifications (webhooks wait at most this much more). */
const FANOUT_MIN_GAP_MS = 200;

export interface FanOut {
  /** Runs the fan-out until caught up; calls made meanwhile fold into one more pass. */
  run(): Promise<void>;
  /** Resolves when no pass is running (a failed one included). */
  settled(): Promise<void>;
}

export function createFanOut(deps: { pool: pg.Pool; jobs: Jobs; clock: Clock; addresses: Pick<EnvironmentAddresses, "url"> }): FanOut {
  /** One fan-out batch in one transaction; how many events it consumed. */
  async function batch(): Promise<number> {
    const { consumed, queued } = await inTransaction(deps.pool, async (client) => {
      await lockFanOut(client);
      // Every transaction below this id has ended: rows with a smaller tx can no longer appear.
      const xmin = await snapshotXmin(client);
      const caughtUp = { tx: xmin, id: "0" };
      const cursor = await fanOutCursor(client);
      if (!cursor) {
        // First run on this database: start from now; older events are history, not news.
        await createFanOutCursor(client, caughtUp);
        return { consumed: 0, queued: 0 };
      }
      // Only organisations with a live subscription are read, through (organization_id, tx, id).
      const subsByOrg = subscriptionsByOrganization(await liveSubscriptions(client));
      const events = await orgEventsAfter(client, { after: cursor, below: xmin, organizationIds: [...subsByOrg.keys()], types: FANOUT_EVENT_TYPES, limit: FANOUT_BATCH });
      const named = await environmentNames(client, [...new Set(events.flatMap((e) => (typeof e.data.environment_id === "string" ? [e.data.environment_id] : [])))]);
      const urls = new Map(named.map((env) => [env.id, deps.addresses.url(env)]));
      // Written with the deployment's final status, in its transaction: there by the time its event is read.
      const tests = await deploymentTests(client, [...new Set(events.flatMap((e) => (e.type === "deployment.status" && typeof e.data.deployment_id === "string" ? [e.data.deployment_id] : [])))]);
      let n = 0;
      for (const d of deliveriesFor(events, subsByOrg, urls, tests)) {
        const id = await insertDelivery(client, d, deps.clock.now());
        if (id) {
          await deps.jobs.send(DELIVERY_QUEUE, { deliveryId: id }, { db: client });
          n++;
        }
      }
      await saveFanOutCursor(client, nextCursor(events, FANOUT_BATCH, caughtUp));
      return { consumed: events.length, queued: n };
    });
    if (queued > 0) deps.jobs.wake();
    return consumed;
  }

  let running: Promise<void> | null = null;
  let again = false;
  function run(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          while ((await batch()) === FANOUT_BATCH);
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

  return {
    run,
    async settled() {
      await running?.catch(() => {});
    },
  };
}
