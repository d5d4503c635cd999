// The read loop of each organisation's feed: a wake-up (a notification, the hub's poll, a
// retry) runs it unless it is running already, in which case the running loop goes round
// once more. Wake-ups of one organisation therefore coalesce into one query at a time,
// shared by all of that organisation's subscribers on this replica.
import type { Position } from "./event-id.ts";
import type { OrgFeed, Subscriber, SubscriberRegistry } from "./subscribers.ts";
import type { StreamRead } from "./stream-reader.ts";

/** A read that failed is tried again after this long. */
const RETRY_MS = 1000;
/** Rows held back by a still-running older transaction are looked for again after this long. */
const HELD_BACK_MS = 25;

export function createFeedLoop(deps: { registry: SubscriberRegistry; read: StreamRead; log: { warn(o: object, m: string): void } }) {
  const { registry, read } = deps;

  function later(orgId: string, feed: OrgFeed, ms: number) {
    if (feed.timer || registry.isClosed()) return;
    feed.timer = setTimeout(() => {
      feed.timer = undefined;
      wake(orgId);
    }, ms);
    feed.timer.unref();
  }

  function wake(orgId: string) {
    const feed = registry.feed(orgId);
    if (!feed || registry.isIdle(feed)) return;
    if (feed.running) {
      feed.dirty = true;
      return;
    }
    void run(orgId, feed);
  }

  /**
   * One round for the subscribers still joining: one read each from its own position. One
   * whose read came back complete goes live; what it returns is whether rows were held back.
   */
  async function catchUp(orgId: string, feed: OrgFeed): Promise<boolean> {
    let heldBack = false;
    for (const s of [...feed.joining]) {
      if (s.closed || registry.isClosed()) continue;
      const r = await read(orgId, s.log, s.ev);
      registry.deliver(s, r, { all: null }, null);
      if (r.more) {
        feed.dirty = true;
        continue;
      }
      heldBack ||= r.heldBack;
      feed.joining = feed.joining.filter((x) => x !== s);
      if (!s.closed) goLive(feed, s);
    }
    feed.joining = feed.joining.filter((x) => !x.closed);
    return heldBack;
  }

  function goLive(feed: OrgFeed, s: Subscriber) {
    if (feed.log === null || feed.ev === null) {
      feed.log = s.log;
      feed.ev = s.ev;
    } else {
      // Anything committed while it joined is read by the shared read below.
      feed.dirty = true;
    }
    feed.live.add(s);
  }

  /** The shared read for every live subscriber; whether rows were held back. */
  async function sharedRead(orgId: string, feed: OrgFeed, from: { log: Position; ev: Position }): Promise<boolean> {
    const r = await read(orgId, from.log, from.ev);
    const shared = { all: null as string | null };
    for (const s of feed.live) registry.deliver(s, r, shared, from);
    feed.log = r.log;
    feed.ev = r.ev;
    if (r.more) feed.dirty = true;
    return r.heldBack;
  }

  /**
   * The organisation's read loop. Subscribers that joined catch up here too, one read each
   * per round, between the shared reads: never concurrently with them, so once a joiner's
   * read comes back complete it stands at or past the shared position and goes live
   * without a gap (rows it has already seen are skipped by position).
   */
  async function run(orgId: string, feed: OrgFeed) {
    feed.running = true;
    // This read re-checks whatever a pending retry was for.
    if (feed.timer) {
      clearTimeout(feed.timer);
      feed.timer = undefined;
    }
    let heldBack = false;
    try {
      do {
        feed.dirty = false;
        const joinersHeldBack = await catchUp(orgId, feed);
        heldBack ||= joinersHeldBack;
        if (feed.live.size === 0 || feed.log === null || feed.ev === null) continue;
        heldBack = await sharedRead(orgId, feed, { log: feed.log, ev: feed.ev });
      } while (feed.dirty && !registry.isIdle(feed) && !registry.isClosed());
    } catch (err) {
      deps.log.warn({ err, organizationId: orgId }, "reading organisation events failed; retrying");
      later(orgId, feed, RETRY_MS);
    } finally {
      feed.running = false;
    }
    if (heldBack) later(orgId, feed, HELD_BACK_MS);
    registry.forget(orgId, feed);
  }

  return { wake };
}
