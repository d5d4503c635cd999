// The hub's subscriber registry: every open stream, grouped into one feed per organisation
// (where the feed's shared reads stand, who is live, who is still catching up), what each
// subscriber may see of a page, and the write to its HTTP response, which drops a
// subscriber too slow to keep up (it resumes with Last-Event-ID). Each knows whose it is
// (person and session), so streams can be ended when that person's access goes.
import { after, atLeast, type Position } from "./event-id.ts";
import type { Frame, ReadResult } from "./stream-reader.ts";

/** Event types every member of the organisation receives, whatever their project roles. */
const ORG_WIDE_TYPES = new Set(["server.stats", "server.status", "server.proxy", "migration_progress"]);

/** What a subscriber needs from its HTTP response. */
export interface Sink {
  write(chunk: string): void;
  /** Bytes written but not yet sent. */
  buffered(): number;
  end(): void;
}

export interface Subscriber {
  orgId: string;
  /** Projects whose events this subscriber may see; null = everything of the organisation. */
  visible: Set<string> | null;
  /** False: not even the organisation-wide events (a project-scoped API key sees only its project). */
  orgWide?: boolean;
  log: Position;
  ev: Position;
  sink: Sink;
  closed: boolean;
  /** Whose stream it is, so it can be ended when their access goes (none: never ended that way). */
  person?: StreamOwner;
  /** The API key whose stream it is, so it ends when the key is revoked. */
  keyId?: string;
}

export interface StreamOwner {
  userId: string;
  sessionId: string;
}

export interface OrgFeed {
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

export function maySee(s: Pick<Subscriber, "visible" | "orgWide">, f: Pick<Frame, "projectId" | "type">): boolean {
  if (s.visible === null) return true;
  if (f.projectId !== null) return s.visible.has(f.projectId);
  return s.orgWide !== false && ORG_WIDE_TYPES.has(f.type);
}

/**
 * The text of a page a subscriber gets: the frames after its position that it may see.
 * `from` is where the shared read started: a subscriber standing exactly there that sees
 * everything takes the page's text as is (built once, in `shared`, for all such subscribers).
 */
export function outputFor(s: Subscriber, r: ReadResult, shared: { all: string | null }, from: { log: Position; ev: Position } | null): string {
  const aligned = from !== null && from.log === s.log && from.ev === s.ev;
  if (aligned && s.visible === null) {
    shared.all ??= r.frames.map((f) => f.text).join("");
    return shared.all;
  }
  let out = "";
  for (const f of r.frames) {
    if (!aligned && !after(f.pos, f.table === 0 ? s.log : s.ev)) continue;
    if (maySee(s, f)) out += f.text;
  }
  return out;
}

export function createSubscriberRegistry(opts: { maxBufferedBytes: number }) {
  const feeds = new Map<string, OrgFeed>();
  /** Every open subscriber, joining or live, so shutdown ends them all. */
  const everyone = new Set<Subscriber>();
  let closed = false;

  const isIdle = (feed: OrgFeed) => feed.live.size === 0 && feed.joining.length === 0;

  /** Removes the organisation's feed once nobody is left on it. */
  function forget(orgId: string, feed: OrgFeed) {
    if (isIdle(feed) && feeds.get(orgId) === feed) {
      if (feed.timer) clearTimeout(feed.timer);
      feeds.delete(orgId);
    }
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

  function send(s: Subscriber, chunk: string) {
    if (s.closed || chunk === "") return;
    if (s.sink.buffered() > opts.maxBufferedBytes) {
      // Too slow to keep up: drop it rather than buffer without bound. The client
      // reconnects with Last-Event-ID and catches up from the database.
      drop(s);
      return;
    }
    s.sink.write(chunk);
  }

  return {
    isClosed: () => closed,
    isIdle,
    forget,
    drop,
    /** The feed of an organisation with someone on it, if any. */
    feed: (orgId: string) => feeds.get(orgId),
    orgIds: () => [...feeds.keys()],

    /** A new subscriber, catching up on its organisation's feed. */
    add(s: Subscriber) {
      everyone.add(s);
      let feed = feeds.get(s.orgId);
      if (!feed) {
        feed = { log: null, ev: null, live: new Set(), joining: [], running: false, dirty: false, timer: undefined };
        feeds.set(s.orgId, feed);
      }
      feed.joining.push(s);
    },

    /** Sends the frames after the subscriber's position that it may see, and moves it on. */
    deliver(s: Subscriber, r: ReadResult, shared: { all: string | null }, from: { log: Position; ev: Position } | null) {
      send(s, outputFor(s, r, shared, from));
      // Taking the shared objects keeps the subscriber "aligned" with the feed (no per-row checks).
      if (atLeast(r.log, s.log)) s.log = r.log;
      if (atLeast(r.ev, s.ev)) s.ev = r.ev;
    },

    /** Every open subscriber, joining or live. */
    open: () => [...everyone],

    /** Ends the streams that match (their access went); how many. */
    endWhere(match: (s: Subscriber) => boolean): number {
      let n = 0;
      for (const s of [...everyone]) {
        if (match(s)) {
          drop(s);
          n++;
        }
      }
      return n;
    },

    /** A comment line to every live subscriber, so proxies keep idle streams open. */
    keepAlive() {
      for (const feed of feeds.values()) for (const s of feed.live) send(s, ": keep-alive\n\n");
    },

    /** Ends every stream; no feed runs again. */
    closeAll() {
      closed = true;
      for (const feed of feeds.values()) if (feed.timer) clearTimeout(feed.timer);
      for (const s of [...everyone]) drop(s);
      feeds.clear();
    },
  };
}
export type SubscriberRegistry = ReturnType<typeof createSubscriberRegistry>;
