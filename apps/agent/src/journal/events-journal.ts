// Outgoing events: numbered and written before they are sent, kept until the control plane
// acknowledges them, resent from the last ack after a reconnect.
import type { JournalDb } from "./database.ts";
import { JournalError } from "./journal-error.ts";
import { LOG_LEVELS } from "./journal-types.ts";
import type { AckOutcome, DroppedCounts, EventInput, JournalEvent, LogLevel } from "./journal-types.ts";
import type { Meta } from "./meta.ts";
import { createDropNotice } from "./drop-notice.ts";
import { createRetention, dropRank, isOverCap } from "./retention.ts";
import type { Caps } from "./retention.ts";

const DEFAULT_PENDING_LIMIT = 500;

interface EventRow {
  seq: number;
  ts: string;
  kind: string;
  level: string | null;
  body: string;
  bytes: number;
  drop_rank: number | null;
}

type SentRow = Pick<EventRow, "seq" | "ts" | "kind" | "level" | "body">;

export interface PendingSummary {
  count: number;
  bytes: number;
  oldestSeq: number | null;
  oldestTs: string | null;
  overCap: boolean;
}

export interface EventsJournal {
  append(input: EventInput): JournalEvent;
  appendMany(inputs: readonly EventInput[]): JournalEvent[];
  pending(afterSeq?: number, limit?: number): JournalEvent[];
  ack(upToSeq: number): AckOutcome;
  nextSeq(): number;
  lastAckedSeq(): number;
  skipTo(seq: number): number;
  droppedCount(): DroppedCounts;
  summary(): PendingSummary;
}

export function createEventsJournal(deps: {
  db: JournalDb;
  meta: Meta;
  caps: Caps;
  now: () => Date;
}): EventsJournal {
  const { db, meta, caps, now } = deps;
  const retention = createRetention({ db, meta, caps });
  const dropNotice = createDropNotice({ db, meta, caps, now });

  // Positional parameters: binding by name costs about a fifth of the insert rate.
  const insert = db.prepare<[number, string, string, string | null, string, number, number | null]>(`
    INSERT INTO events (seq, ts, kind, level, body, bytes, drop_rank) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  // Only the columns an event is made of: every column read costs, on the send path.
  const selectAfter = db.prepare<[number, number], SentRow>(
    "SELECT seq, ts, kind, level, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
  );
  const measureUpTo = db.prepare<[number], { count: number; bytes: number }>(
    "SELECT count(*) AS count, coalesce(sum(bytes), 0) AS bytes FROM events WHERE seq <= ?",
  );
  const deleteUpTo = db.prepare<[number]>("DELETE FROM events WHERE seq <= ?");
  const selectOldest = db.prepare<[], { seq: number; ts: string }>(
    "SELECT seq, ts FROM events ORDER BY seq LIMIT 1",
  );

  // Seq is taken from the meta counter in the same transaction as the insert, so a crash
  // can neither hand out a seq twice nor leave a gap that a restart would fill.
  function insertAll(inputs: readonly EventInput[], rankOf = dropRank): JournalEvent[] {
    let seq = meta.get("next_event_seq");
    let bytes = 0;
    const stored: JournalEvent[] = [];
    for (const input of inputs) {
      const row = toRow(input, seq, now, rankOf);
      insert.run(row.seq, row.ts, row.kind, row.level, row.body, row.bytes, row.drop_rank);
      bytes += row.bytes;
      // Built from the input rather than re-parsed: appendMany is on the log hot path.
      stored.push({ seq, ts: row.ts, kind: row.kind, level: input.level ?? null, body: input.body });
      seq += 1;
    }
    meta.set("next_event_seq", seq);
    meta.add("pending_count", inputs.length);
    meta.add("pending_bytes", bytes);
    return stored;
  }

  const appendAll = db.transaction((inputs: readonly EventInput[]): JournalEvent[] => {
    const stored = insertAll(inputs);
    const dropped = retention.enforce(dropNotice.pending);
    if (dropped) {
      // The notice goes in after the drop, which left room for it, and is never droppable
      // itself: appending it cannot start another round, and at most one is pending.
      const notice = dropNotice.supersede(dropped, retention.droppedCount());
      const [written] = insertAll([notice], () => null);
      if (written) dropNotice.appended(written.seq);
    }
    return stored;
  });

  const ack = db.transaction((upToSeq: number): AckOutcome => {
    if (!Number.isSafeInteger(upToSeq)) throw new JournalError("invalid_input", "ack seq must be an integer");
    const lastAcked = meta.get("last_acked_seq");
    // An ack past the last seq handed out cannot be about our events; clamping keeps a
    // confused peer from making us skip seqs we have not written yet.
    const upTo = Math.min(upToSeq, meta.get("next_event_seq") - 1);
    // Acks are cumulative, so an older or repeated one carries no news.
    if (upTo <= lastAcked) return { deleted: 0, lastAckedSeq: lastAcked };
    const gone = measureUpTo.get(upTo) ?? { count: 0, bytes: 0 };
    deleteUpTo.run(upTo);
    meta.add("pending_count", -gone.count);
    meta.add("pending_bytes", -gone.bytes);
    meta.set("last_acked_seq", upTo);
    return { deleted: gone.count, lastAckedSeq: upTo };
  });

  const skipTo = db.transaction((seq: number): number => {
    if (!Number.isSafeInteger(seq)) throw new JournalError("invalid_input", "seq must be an integer");
    meta.raise("next_event_seq", seq);
    return meta.get("next_event_seq");
  });

  return {
    append(input) {
      const [stored] = appendAll([input]);
      if (!stored) throw new Error("append stored nothing");
      return stored;
    },
    appendMany: (inputs) => (inputs.length === 0 ? [] : appendAll(inputs)),
    pending(afterSeq, limit = DEFAULT_PENDING_LIMIT) {
      if (!Number.isSafeInteger(limit) || limit < 1) {
        throw new JournalError("invalid_input", "limit must be a positive integer");
      }
      return selectAfter.all(afterSeq ?? meta.get("last_acked_seq"), limit).map(toEvent);
    },
    ack,
    nextSeq: () => meta.get("next_event_seq"),
    lastAckedSeq: () => meta.get("last_acked_seq"),
    // After a power cut (synchronous = NORMAL) the counter may roll back behind seqs the
    // control plane already holds; the link raises it from the handshake so none is reused.
    skipTo,
    droppedCount: () => retention.droppedCount(),
    summary() {
      const count = meta.get("pending_count");
      const bytes = meta.get("pending_bytes");
      const oldest = selectOldest.get();
      return {
        count,
        bytes,
        oldestSeq: oldest?.seq ?? null,
        oldestTs: oldest?.ts ?? null,
        overCap: isOverCap(caps, count, bytes),
      };
    },
  };
}

function toRow(input: EventInput, seq: number, now: () => Date, rankOf: typeof dropRank): EventRow {
  if (typeof input.kind !== "string" || input.kind.length === 0) {
    throw new JournalError("invalid_input", "event kind must be a non-empty string");
  }
  const level = input.level ?? null;
  if (input.kind === "log" ? !isLogLevel(level) : level !== null) {
    throw new JournalError("invalid_input", `event of kind ${input.kind} has level ${String(level)}`);
  }
  if (typeof input.body !== "object" || input.body === null || Array.isArray(input.body)) {
    throw new JournalError("invalid_input", "event body must be a JSON object");
  }
  const ts = input.ts ?? now().toISOString();
  const body = JSON.stringify(input.body);
  return {
    seq,
    ts,
    kind: input.kind,
    level,
    body,
    // Roughly what the event costs on the wire; the byte cap is about that.
    bytes: Buffer.byteLength(body) + input.kind.length + ts.length + (level?.length ?? 0),
    drop_rank: rankOf(input.kind, level),
  };
}

function isLogLevel(value: unknown): value is LogLevel {
  return (LOG_LEVELS as readonly unknown[]).includes(value);
}

function toEvent(row: SentRow): JournalEvent {
  return {
    seq: row.seq,
    ts: row.ts,
    kind: row.kind,
    level: isLogLevel(row.level) ? row.level : null,
    body: JSON.parse(row.body),
  };
}
