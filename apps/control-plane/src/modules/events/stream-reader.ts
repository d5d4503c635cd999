// The gap-free reader of one organisation's event stream: one query (event-log.repo.ts's
// readStream) returns the next page of deployment_logs and of org_events after two
// positions, both only below the oldest transaction still running (xmin), and framesOf
// turns it into SSE frames in (tx, id) order. A row written by a transaction that commits
// late can therefore never land behind a position already handed out; rows held back that
// way are reported (heldBack) so the caller reads again shortly.
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import { after, type Position } from "./event-id.ts";
import { readStream, type StreamRow } from "./event-log.repo.ts";

export interface Frame {
  /** 0 a log line (deployment_logs), 1 an event (org_events). */
  table: 0 | 1;
  pos: Position;
  projectId: string | null;
  type: string;
  /** The complete SSE frame, id line included. */
  text: string;
}

export interface ReadResult {
  frames: Frame[];
  log: Position;
  ev: Position;
  /** A table filled its page: read again at once. */
  more: boolean;
  /** Rows exist that a still-running older transaction holds back. */
  heldBack: boolean;
}

export type StreamRead = (orgId: string, log: Position, ev: Position) => Promise<ReadResult>;

type Parsed = { tx: bigint; id: bigint; row: StreamRow };
const byPosition = (a: Parsed, b: Parsed) => (a.tx < b.tx ? -1 : a.tx > b.tx ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** The page's rows by table, and what the marker row says (xmin, and whether rows wait above it). */
function splitRows(rows: StreamRow[]) {
  let heldBack = false;
  let xmin = 0n;
  const logs: Parsed[] = [];
  const evs: Parsed[] = [];
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
  return { logs, evs, xmin, heldBack };
}

/** How many rows of each page may be handed out: a full page ends somewhere in the middle, so the other table goes no further than that. */
function usable(logs: Parsed[], evs: Parsed[], batch: number) {
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
  return { nLog, nEv, more: (logs.length === batch && nLog > 0) || (evs.length === batch && nEv > 0) };
}

function frameData(useLog: boolean, r: StreamRow): string {
  return useLog
    ? JSON.stringify({ id: r.id, deployment_id: r.deployment_id, level: r.level, message: r.message, step: r.step, timestamp: new Date(Number(r.ms)).toISOString() })
    : r.data!;
}

/**
 * Frames of one page read after (log, ev), merged in tx order, and where each table then
 * stands. `batch` is the page size the rows were read with; `at` the unix time in the ids.
 */
export function framesOf(rows: StreamRow[], from: { log: Position; ev: Position }, batch: number, at: number): ReadResult {
  const { logs, evs, xmin, heldBack } = splitRows(rows);
  const { nLog, nEv, more } = usable(logs, evs, batch);
  const frames: Frame[] = [];
  let curLog = from.log;
  let curEv = from.ev;
  // The id's text, kept per table: PostgreSQL's decimal text is what encodeCursor writes.
  let logText = `${from.log.tx}.${from.log.id}`;
  let evText = `${from.ev.tx}.${from.ev.id}`;
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
    const type = useLog ? "deployment.log" : r.type!;
    frames.push({ table: useLog ? 0 : 1, pos, projectId: r.project_id, type, text: `id: ${logText}-${evText}-${at}\nevent: ${type}\ndata: ${frameData(useLog, r)}\n\n` });
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

/** Reads pages for any organisation, at most `maxConcurrentReads` at once (a burst leaves the pool to the API). */
export function createStreamReader(opts: { pool: pg.Pool; clock: Clock; batch: number; maxConcurrentReads: number }): StreamRead {
  let reading = 0;
  const queued: (() => void)[] = [];
  async function query(orgId: string, log: Position, ev: Position) {
    while (reading >= opts.maxConcurrentReads) await new Promise<void>((resolve) => queued.push(resolve));
    reading++;
    try {
      return await readStream(opts.pool, orgId, log, ev, opts.batch);
    } finally {
      reading--;
      queued.shift()?.();
    }
  }
  return async (orgId, log, ev) => {
    const rows = await query(orgId, log, ev);
    return framesOf(rows, { log, ev }, opts.batch, Math.floor(opts.clock.now().getTime() / 1000));
  };
}
