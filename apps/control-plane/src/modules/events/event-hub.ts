// The read side of the organisation event stream, one per replica. One LISTEN connection
// hears `berth_org_events` (payload: organisation id, sent at commit by event-log.ts and
// the status triggers) and wakes that organisation's feed (feed-loop.ts), which reads for
// all of its subscribers on this replica (subscribers.ts). Every replica does the same, so
// a subscriber sees an event whichever replica wrote it.
//
// Gapless reading (stream-reader.ts): rows of deployment_logs and org_events are read in
// (tx, id) order, and only rows whose transaction is older than the oldest transaction
// still running. A row written by a transaction that commits late therefore can never
// land behind a position already handed out. Rows held back that way are read again
// shortly (the late commit also notifies).
//
// Two loops run beside the feeds (lib/repeat.ts, so neither overlaps itself): a keep-alive
// comment to every live stream, and a poll of every organisation with subscribers.
//
// Access is re-checked while a stream is open: the same LISTEN connection hears
// `berth_access` (modules/auth/access-changes.ts: a member removed or their role changed, a
// session revoked), and the hub ends the streams concerned at once, on every replica. A
// client that reconnects is checked afresh (401, 404, or its new role). `recheckAccess`
// (run by the app's maintenance every minute) asks about every open stream, which bounds
// anything a notification missed and ends streams whose session expired.
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import { repeat } from "../../lib/repeat.ts";
import { listen, type PgListener } from "../../db/pg-listener.ts";
import type { StreamCursor } from "./event-id.ts";
import { currentSnapshot, EVENTS_CHANNEL } from "./event-log.repo.ts";
import { createFeedLoop } from "./feed-loop.ts";
import { createStreamReader } from "./stream-reader.ts";
import { createSubscriberRegistry, type Sink, type StreamOwner, type Subscriber } from "./subscribers.ts";
import { ACCESS_CHANNEL, parseAccessChange } from "../auth/access-changes.ts";
import { KEYS_CHANNEL } from "../api-keys/key-cache.ts";

export interface HubOptions {
  pool: pg.Pool;
  clock: Clock;
  log: { warn(o: object, m: string): void };
  /** A comment line this often keeps proxies from closing an idle stream. */
  heartbeatMs?: number;
  /** Every organisation with subscribers is read this often even without a notification. */
  pollMs?: number;
  /** Rows per table per query. */
  batch?: number;
  /** Reads in flight at once across organisations, so a burst leaves the pool to the API. */
  maxConcurrentReads?: number;
  /** A subscriber whose unsent output exceeds this is disconnected (it resumes with Last-Event-ID). */
  maxBufferedBytes?: number;
  /** For recheckAccess: whether each stream's session may still read its organisation. */
  stillAllowed?: (streams: { sessionId: string; organizationId: string }[], now: Date) => Promise<boolean[]>;
}

export interface Subscription {
  close(): void;
}

export function createEventHub(opts: HubOptions) {
  const { pool, clock } = opts;
  const registry = createSubscriberRegistry({ maxBufferedBytes: opts.maxBufferedBytes ?? 8 * 1024 * 1024 });
  const read = createStreamReader({ pool, clock, batch: opts.batch ?? 2000, maxConcurrentReads: opts.maxConcurrentReads ?? 4 });
  const { wake } = createFeedLoop({ registry, read, log: opts.log });
  let listener: Promise<PgListener> | null = null;

  const heartbeat = repeat(() => registry.keepAlive(), {
    everyMs: opts.heartbeatMs ?? 15_000,
    onError: (err) => opts.log.warn({ err }, "sending keep-alives failed"),
  });
  // Covers notifications missed while the LISTEN connection was being re-established.
  const poll = repeat(
    () => {
      for (const orgId of registry.orgIds()) wake(orgId);
    },
    { everyMs: opts.pollMs ?? 5_000, onError: (err) => opts.log.warn({ err }, "polling organisation events failed") },
  );

  function onNotify(channel: string, payload: string) {
    if (channel === EVENTS_CHANNEL) return wake(payload);
    if (channel === KEYS_CHANNEL) return void registry.endWhere((s) => s.keyId === payload);
    const change = parseAccessChange(payload);
    if (!change) return;
    if (change.kind === "session") registry.endWhere((s) => s.person?.sessionId === change.sessionId);
    else registry.endWhere((s) => s.orgId === change.organizationId && s.person?.userId === change.userId);
  }

  function ensureListening(): Promise<PgListener> {
    listener ??= listen(pool, [EVENTS_CHANNEL, ACCESS_CHANNEL, KEYS_CHANNEL], onNotify, (msg, err) => opts.log.warn({ err }, msg)).catch((err: unknown) => {
      listener = null;
      throw err;
    });
    return listener;
  }

  return {
    /** Where a stream starts: "now", or the resume point if it is one this database can continue. */
    async startPosition(resume: StreamCursor | null): Promise<{ cursor: StreamCursor; unknown: boolean }> {
      const { xmin, xmax } = await currentSnapshot(pool);
      const at = Math.floor(clock.now().getTime() / 1000);
      if (resume && resume.log.tx <= xmax && resume.ev.tx <= xmax) return { cursor: resume, unknown: false };
      // (xmin, 0): every row of a transaction not yet finished when the stream opened.
      return { cursor: { log: { tx: xmin, id: 0n }, ev: { tx: xmin, id: 0n }, at }, unknown: resume !== null };
    },

    /** Resolves once this replica listens for notifications (call before answering 200). */
    async ready(): Promise<void> {
      await ensureListening();
    },

    /**
     * Streams the organisation's events after `from` to the sink until close(), or until the
     * access of `person` (their membership, their session) goes, or the API key `keyId` is revoked.
     * `orgWide: false` withholds the organisation-wide events too (a project-scoped key).
     */
    async subscribe(
      orgId: string,
      from: StreamCursor,
      visible: Set<string> | null,
      sink: Sink,
      person?: StreamOwner,
      key?: { keyId: string; orgWide: boolean },
    ): Promise<Subscription> {
      await ensureListening();
      const s: Subscriber = {
        orgId,
        visible,
        log: from.log,
        ev: from.ev,
        sink,
        closed: false,
        ...(person ? { person } : {}),
        ...(key ? { keyId: key.keyId, orgWide: key.orgWide } : {}),
      };
      if (registry.isClosed()) {
        sink.end();
        return { close: () => {} };
      }
      registry.add(s);
      wake(orgId);
      return { close: () => registry.drop(s) };
    },

    /** Ends the open streams whose session or membership no longer allows them; how many. */
    async recheckAccess(): Promise<number> {
      const owned = registry.open().filter((s) => s.person !== undefined);
      if (owned.length === 0 || !opts.stillAllowed) return 0;
      const ok = await opts.stillAllowed(
        owned.map((s) => ({ sessionId: s.person!.sessionId, organizationId: s.orgId })),
        clock.now(),
      );
      const gone = new Set(owned.filter((_, i) => !ok[i]));
      return registry.endWhere((s) => gone.has(s));
    },

    /** Open streams on this replica. */
    subscriberCount: () => registry.open().length,

    /**
     * Drain (lifecycle/drain.ts): every open stream gets a `retry: <ms>` hint, `retryMs()` for
     * each, and ends; its client reconnects after that long (to another replica: the load
     * balancer no longer sends here) with Last-Event-ID and misses nothing. Then as close().
     * Resolves with how many streams were ended.
     */
    async handOver(retryMs: () => number): Promise<number> {
      const open = registry.open();
      for (const s of open) s.sink.write(`retry: ${Math.max(0, Math.round(retryMs()))}\n\n`);
      await this.close();
      return open.length;
    },

    /** Ends every stream (on shutdown) and stops listening. */
    async close() {
      heartbeat.stop();
      poll.stop();
      registry.closeAll();
      const l = listener;
      listener = null;
      if (l) await (await l.catch(() => null))?.close();
    },
  };
}
export type EventHub = ReturnType<typeof createEventHub>;
