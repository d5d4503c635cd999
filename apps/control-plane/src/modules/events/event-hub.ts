// The read side of the organisation event stream, one per replica. One LISTEN connection
// hears `berth_org_events` (payload: organisation id, sent at commit by event-log.ts and
// the status triggers); wake-ups of one organisation coalesce into one query at a time,
// shared by all of that organisation's subscribers on this replica. Every replica does the
// same, so a subscriber sees an event whichever replica wrote it.
//
// Gapless reading: rows of deployment_logs and org_events are read in (tx, id) order, and
// only rows whose transaction is older than the oldest transaction still running
// (pg_snapshot_xmin of the query's own snapshot). A row written by a transaction that
// commits late therefore can never land behind a position already handed out. Rows held
// back that way are read again shortly (the late commit also notifies).
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import { listen, type PgListener } from "../../db/pg-listener.ts";
import { after, atLeast, type Position, type StreamCursor } from "./event-id.ts";
import { currentSnapshot, EVENTS_CHANNEL, readStream, type StreamRow } from "./event-log.repo.ts";

/** Event types every member of the organisation receives, whatever their project roles. */
const ORG_WIDE_TYPES = new Set(["server.stats", "server.status", "migration_progress"]);

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
}

/** What a subscriber needs from its HTTP response. */
export interface Sink {
  write(chunk: string): void;
  /** Bytes written but not yet sent. */
  buffered(): number;
  end(): void;
}

export interface Subscription {
  close(): void;
}

interface Frame {
  table: 0 | 1;
  pos: Position;
  projectId: string | null;
  type: string;
  /** The complete SSE frame, id line included. */
  text: string;
}

interface ReadResult {
  frames: Frame[];
  log: Position;
  ev: Position;
  /** A table filled its page: read again at once. */
  more: boolean;
  /** Rows exist that a still-running older transaction holds back. */
  heldBack: boolean;
}

interface Subscriber {
  orgId: string;
  /** Projects whose events this subscriber may see; null = everything of the organisation. */
  visible: Set<string> | null;
  log: Position;
  ev: Position;
  sink: Sink;
  closed: boolean;
}

interface OrgFeed {
  /** Where the shared reads stand; null until the first subscriber goes live. */
  log: Position | null;
  ev: Position | null;
  live: Set<Subscriber>;
  /** Subscribers still catching up from their own position (one read each per round). */
  joining: Subscriber[];
  running: boolean;
  dirty: boolean;
  timer: NodeJS.Timeout | undefined;
}

type Parsed = { tx: bigint; id: bigint; row: StreamRow };
const byPosition = (a: Parsed, b: Parsed) => (a.tx < b.tx ? -1 : a.tx > b.tx ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function createEventHub(opts: HubOptions) {
  const { pool, clock } = opts;
  const batch = opts.batch ?? 2000;
  const maxBuffered = opts.maxBufferedBytes ?? 8 * 1024 * 1024;
  const feeds = new Map<string, OrgFeed>();
  /** Every open subscriber, joining or live, so shutdown ends them all. */
  const everyone = new Set<Subscriber>();
  let listener: Promise<PgListener> | null = null;
  let closed = false;

  const heartbeat = setInterval(() => {
    for (const feed of feeds.values()) for (const s of feed.live) send(s, ": keep-alive\n\n");
  }, opts.heartbeatMs ?? 15_000);
  heartbeat.unref();
  // Covers notifications missed while the LISTEN connection was being re-established.
  const poll = setInterval(() => {
    for (const orgId of feeds.keys()) wake(orgId);
  }, opts.pollMs ?? 5_000);
  poll.unref();

  function ensureListening(): Promise<PgListener> {
    listener ??= listen(pool, [EVENTS_CHANNEL], (_ch, orgId) => wake(orgId), (msg, err) => opts.log.warn({ err }, msg)).catch((err: unknown) => {
      listener = null;
      throw err;
    });
    return listener;
  }

  const maxReads = opts.maxConcurrentReads ?? 4;
  let reading = 0;
  const queued: (() => void)[] = [];
  async function query(orgId: string, log: Position, ev: Position) {
    while (reading >= maxReads) await new Promise<void>((resolve) => queued.push(resolve));
    reading++;
    try {
      return await readStream(pool, orgId, log, ev, batch);
    } finally {
      reading--;
      queued.shift()?.();
    }
  }

  /** Reads what follows (log, ev), up to the oldest running writer. */
  async function read(orgId: string, log: Position, ev: Position): Promise<ReadResult> {
    const rows = await query(orgId, log, ev);
    let heldBack = false;
    const logs: Parsed[] = [];
    const evs: Parsed[] = [];
    let xmin = 0n;
    for (const r of rows) {
      if (r.k === 2) {
        xmin = BigInt(r.tx);
        heldBack = r.id === "1";
      } else (r.k === 0 ? logs : evs).push({ tx: BigInt(r.tx), id: BigInt(r.id), row: r });
    }
    // The join may have reordered the page (it practically never does).
    for (let i = 1; i < logs.length; i++) {
      if (byPosition(logs[i - 1]!, logs[i]!) > 0) {
        logs.sort(byPosition);
        break;
      }
    }
    // A full page ends somewhere in the middle: the other table goes no further than that.
    let bound: bigint | null = null;
    for (const page of [logs, evs]) {
      if (page.length === batch) {
        const last = page[page.length - 1]!.tx;
        bound = bound === null || last < bound ? last : bound;
      }
    }
    const take = (page: Parsed[]) => {
      if (bound === null) return page.length;
      let n = 0;
      while (n < page.length && page[n]!.tx <= bound) n++;
      return n;
    };
    const nLog = take(logs);
    const nEv = take(evs);
    const more = (logs.length === batch && nLog > 0) || (evs.length === batch && nEv > 0);

    const at = Math.floor(clock.now().getTime() / 1000);
    const frames: Frame[] = [];
    let curLog = log;
    let curEv = ev;
    // The id's text, kept per table: PostgreSQL's decimal text is what encodeCursor writes.
    let logText = `${log.tx}.${log.id}`;
    let evText = `${ev.tx}.${ev.id}`;
    let i = 0;
    let j = 0;
    while (i < nLog || j < nEv) {
      const l = i < nLog ? logs[i]! : null;
      const e = j < nEv ? evs[j]! : null;
      const useLog = l !== null && (e === null || l.tx <= e.tx);
      const p = useLog ? l : e!;
      const pos = { tx: p.tx, id: p.id };
      const r = p.row;
      if (useLog) {
        curLog = pos;
        logText = `${r.tx}.${r.id}`;
        i++;
      } else {
        curEv = pos;
        evText = `${r.tx}.${r.id}`;
        j++;
      }
      const id = `${logText}-${evText}-${at}`;
      const type = useLog ? "deployment.log" : r.type!;
      const data = useLog
        ? JSON.stringify({ id: r.id, deployment_id: r.deployment_id, level: r.level, message: r.message, step: r.step, timestamp: new Date(Number(r.ms)).toISOString() })
        : r.data;
      frames.push({ table: useLog ? 0 : 1, pos, projectId: r.project_id, type, text: `id: ${id}\nevent: ${type}\ndata: ${data}\n\n` });
    }
    if (!more) {
      // Everything below xmin has been read: positions move up to it, even past rows
      // since pruned, so the next read and a resuming client start there.
      const horizon = { tx: xmin, id: 0n };
      if (after(horizon, curLog)) curLog = horizon;
      if (after(horizon, curEv)) curEv = horizon;
    }
    return { frames, log: curLog, ev: curEv, more, heldBack };
  }

  function maySee(s: Subscriber, f: Frame): boolean {
    if (s.visible === null) return true;
    if (f.projectId !== null) return s.visible.has(f.projectId);
    return ORG_WIDE_TYPES.has(f.type);
  }

  function send(s: Subscriber, chunk: string) {
    if (s.closed || chunk === "") return;
    if (s.sink.buffered() > maxBuffered) {
      // Too slow to keep up: drop it rather than buffer without bound. The client
      // reconnects with Last-Event-ID and catches up from the database.
      drop(s);
      return;
    }
    s.sink.write(chunk);
  }

  /** Sends the frames after the subscriber's position that it may see, and moves it on. */
  function deliver(s: Subscriber, r: ReadResult, shared: { all: string | null }, from: { log: Position; ev: Position } | null) {
    const aligned = from !== null && from.log === s.log && from.ev === s.ev;
    if (aligned && s.visible === null) {
      shared.all ??= r.frames.map((f) => f.text).join("");
      send(s, shared.all);
    } else {
      let out = "";
      for (const f of r.frames) {
        if (!aligned && !after(f.pos, f.table === 0 ? s.log : s.ev)) continue;
        if (maySee(s, f)) out += f.text;
      }
      send(s, out);
    }
    // Taking the shared objects keeps the subscriber "aligned" with the feed (no per-row checks).
    if (atLeast(r.log, s.log)) s.log = r.log;
    if (atLeast(r.ev, s.ev)) s.ev = r.ev;
  }

  function feedOf(orgId: string): OrgFeed {
    let feed = feeds.get(orgId);
    if (!feed) {
      feed = { log: null, ev: null, live: new Set(), joining: [], running: false, dirty: false, timer: undefined };
      feeds.set(orgId, feed);
    }
    return feed;
  }

  function forget(orgId: string, feed: OrgFeed) {
    if (feed.live.size === 0 && feed.joining.length === 0 && feeds.get(orgId) === feed) {
      if (feed.timer) clearTimeout(feed.timer);
      feeds.delete(orgId);
    }
  }

  function later(orgId: string, feed: OrgFeed, ms: number) {
    if (feed.timer || closed) return;
    feed.timer = setTimeout(() => {
      feed.timer = undefined;
      wake(orgId);
    }, ms);
    feed.timer.unref();
  }

  function wake(orgId: string) {
    const feed = feeds.get(orgId);
    if (!feed || (feed.live.size === 0 && feed.joining.length === 0)) return;
    if (feed.running) {
      feed.dirty = true;
      return;
    }
    void run(orgId, feed);
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
        for (const s of [...feed.joining]) {
          if (s.closed || closed) continue;
          const r = await read(orgId, s.log, s.ev);
          deliver(s, r, { all: null }, null);
          if (r.more) {
            feed.dirty = true;
            continue;
          }
          heldBack ||= r.heldBack;
          feed.joining = feed.joining.filter((x) => x !== s);
          if (s.closed) continue;
          if (feed.log === null || feed.ev === null) {
            feed.log = s.log;
            feed.ev = s.ev;
          } else {
            // Anything committed while it joined is read by the shared read below.
            feed.dirty = true;
          }
          feed.live.add(s);
        }
        feed.joining = feed.joining.filter((x) => !x.closed);
        if (feed.live.size === 0 || feed.log === null || feed.ev === null) continue;
        const from = { log: feed.log, ev: feed.ev };
        const r = await read(orgId, from.log, from.ev);
        heldBack = r.heldBack;
        const shared = { all: null as string | null };
        for (const s of feed.live) deliver(s, r, shared, from);
        feed.log = r.log;
        feed.ev = r.ev;
        if (r.more) feed.dirty = true;
      } while (feed.dirty && (feed.live.size > 0 || feed.joining.length > 0) && !closed);
    } catch (err) {
      opts.log.warn({ err, organizationId: orgId }, "reading organisation events failed; retrying");
      later(orgId, feed, 1000);
    } finally {
      feed.running = false;
    }
    if (heldBack) later(orgId, feed, 25);
    forget(orgId, feed);
  }

  function drop(s: Subscriber) {
    if (s.closed) return;
    s.closed = true;
    everyone.delete(s);
    const feed = feeds.get(s.orgId);
    if (feed) {
      feed.live.delete(s);
      feed.joining = feed.joining.filter((x) => x !== s);
      forget(s.orgId, feed);
    }
    s.sink.end();
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

    /** Streams the organisation's events after `from` to the sink until close(). */
    async subscribe(orgId: string, from: StreamCursor, visible: Set<string> | null, sink: Sink): Promise<Subscription> {
      await ensureListening();
      const s: Subscriber = { orgId, visible, log: from.log, ev: from.ev, sink, closed: false };
      if (closed) {
        sink.end();
        return { close: () => {} };
      }
      everyone.add(s);
      feedOf(orgId).joining.push(s);
      wake(orgId);
      return { close: () => drop(s) };
    },

    /** Ends every stream (on shutdown) and stops listening. */
    async close() {
      closed = true;
      clearInterval(heartbeat);
      clearInterval(poll);
      for (const feed of feeds.values()) if (feed.timer) clearTimeout(feed.timer);
      for (const s of [...everyone]) drop(s);
      feeds.clear();
      const l = listener;
      listener = null;
      if (l) await (await l.catch(() => null))?.close();
    },
  };
}
export type EventHub = ReturnType<typeof createEventHub>;

