// The id of every event on the organisation stream: where the stream stands in BOTH
// tables it reads, plus when the server wrote it, as one opaque string
//   <logTx>.<logId>-<evTx>.<evId>-<unixSeconds>
// (tx = the writing transaction's xid8, id = the row's bigserial). Rows are read in
// (tx, id) order and only below the oldest running writer (see stream-reader.ts), so "every row
// after this position" is exact: resuming from an id neither skips nor repeats a row. The
// time says how old a resume point is, to tell a client when what it missed was pruned.
import { DomainError } from "../../lib/errors.ts";

export interface Position {
  tx: bigint;
  id: bigint;
}

export interface StreamCursor {
  log: Position;
  ev: Position;
  /** Unix seconds when this position was handed out. */
  at: number;
}

const PATTERN = /^(\d{1,20})\.(\d{1,20})-(\d{1,20})\.(\d{1,20})-(\d{1,12})$/;

export function encodeCursor(c: StreamCursor): string {
  return `${c.log.tx}.${c.log.id}-${c.ev.tx}.${c.ev.id}-${c.at}`;
}

/** Null when the text is not an id this server hands out. */
export function decodeCursor(text: string): StreamCursor | null {
  const m = PATTERN.exec(text.trim());
  if (!m) return null;
  const n = m.slice(1).map((s) => BigInt(s));
  if (n.slice(0, 4).some((v) => v > 0xffff_ffff_ffff_ffffn)) return null;
  return { log: { tx: n[0]!, id: n[1]! }, ev: { tx: n[2]!, id: n[3]! }, at: Number(n[4]!) };
}

/** Parses Last-Event-ID; a malformed one is a 400 with a stable code. */
export function parseLastEventId(text: string): StreamCursor {
  const c = decodeCursor(text);
  if (!c) {
    throw new DomainError("invalid_last_event_id", "Last-Event-ID is not an event id of this stream; reconnect without it to start from now");
  }
  return c;
}

export const after = (a: Position, b: Position): boolean => a.tx > b.tx || (a.tx === b.tx && a.id > b.id);
export const atLeast = (a: Position, b: Position): boolean => !after(b, a);
