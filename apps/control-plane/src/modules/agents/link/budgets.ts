// Each server's log budget: how many `log` events, and how many bytes of their text, the
// control plane stores from it per minute. Lines past the budget are dropped but still
// acknowledged (the agent's journal must move on); every other kind of event (steps,
// command results, stats, container states) always passes. A drop is made visible where the
// lines would have gone: the slot (seq) of the last line dropped from a batch holds instead
// one warning line saying how many were dropped, with that line's deployment, command and
// step, so it is stored like any other line of that deployment. At most one notice every
// NOTICE_EVERY_MS per server, counting every line dropped since the previous notice (a
// notice per batch would let a flood of one-line batches store a notice per line). A batch
// whose last lines are dropped without a notice is still acknowledged to its last seq
// (events.ts passes it to ingestion as `through`).
import type { Event, LogEvent } from "@berth/protocol";

export const WINDOW_MS = 60_000;
export const NOTICE_EVERY_MS = 10_000;

export interface BudgetOptions {
  linesPerMinute: number;
  bytesPerMinute: number;
  /** Milliseconds; the gateway passes the app's clock. */
  now(): number;
}

export interface Admitted {
  /** The batch as it is to be stored: the same array when nothing was dropped. */
  events: Event[];
  /** Log lines of this batch that were dropped (the one whose slot holds the notice included). */
  dropped: number;
  /** The notice put in a dropped line's slot, if one was due. */
  notice: LogEvent | null;
}

interface ServerBudget {
  windowStart: number;
  lines: number;
  bytes: number;
  /** A line did not fit: the rest of this window's lines are dropped. */
  spent: boolean;
  /** Dropped since the last notice. */
  untold: number;
  lastNoticeAt: number;
}

/** What a log line costs the byte budget: its message and data as stored. */
export function logBytes(e: LogEvent): number {
  return Buffer.byteLength(e.message) + (e.data === undefined ? 0 : Buffer.byteLength(JSON.stringify(e.data)));
}

export function noticeText(dropped: number, opts: Pick<BudgetOptions, "linesPerMinute" | "bytesPerMinute">): string {
  const mib = Math.round((opts.bytesPerMinute / (1024 * 1024)) * 10) / 10;
  return `${dropped} log line${dropped === 1 ? "" : "s"} dropped: this server sent more than ${opts.linesPerMinute} lines (or ${mib} MiB) of logs a minute`;
}

export function createLogBudget(opts: BudgetOptions) {
  const budgets = new Map<string, ServerBudget>();
  let pruneAbove = 1024;

  /** Forgets servers whose window ended and that owe no notice, once the map has doubled. */
  function prune(now: number) {
    if (budgets.size <= pruneAbove) return;
    for (const [id, b] of budgets) if (now - b.windowStart >= WINDOW_MS && b.untold === 0) budgets.delete(id);
    pruneAbove = Math.max(1024, budgets.size * 2);
  }

  function budgetOf(serverId: string, now: number): ServerBudget {
    let b = budgets.get(serverId);
    if (!b) {
      prune(now);
      b = { windowStart: now, lines: 0, bytes: 0, spent: false, untold: 0, lastNoticeAt: -Infinity };
      budgets.set(serverId, b);
    } else if (now - b.windowStart >= WINDOW_MS) {
      Object.assign(b, { windowStart: now, lines: 0, bytes: 0, spent: false });
    }
    return b;
  }

  /** Whether the line fits in what is left of the window's budget (taking it out if so). */
  function fits(b: ServerBudget, e: LogEvent): boolean {
    if (b.spent) return false;
    const bytes = logBytes(e);
    if (b.lines + 1 > opts.linesPerMinute || b.bytes + bytes > opts.bytesPerMinute) {
      b.spent = true;
      return false;
    }
    b.lines += 1;
    b.bytes += bytes;
    return true;
  }

  return {
    /** Takes the batch's log lines out of the server's budget; see Admitted. */
    admit(serverId: string, events: Event[]): Admitted {
      const now = opts.now();
      const b = budgetOf(serverId, now);
      // Built only once a line is dropped: a batch within the budget is not copied.
      let kept: Event[] | null = null;
      let last: LogEvent | null = null;
      let lastAt = -1;
      let dropped = 0;
      for (let i = 0; i < events.length; i++) {
        const e = events[i]!;
        if (e.kind === "log" && !fits(b, e)) {
          kept ??= events.slice(0, i);
          dropped += 1;
          last = e;
          lastAt = kept.length;
          continue;
        }
        kept?.push(e);
      }
      if (kept === null || last === null) return { events, dropped: 0, notice: null };
      b.untold += dropped;
      if (now - b.lastNoticeAt < NOTICE_EVERY_MS) return { events: kept, dropped, notice: null };
      const notice: LogEvent = {
        seq: last.seq,
        ts: last.ts,
        kind: "log",
        level: "warning",
        command_id: last.command_id,
        deployment_id: last.deployment_id,
        step: last.step,
        message: noticeText(b.untold, opts),
        data: { source: "log_budget", dropped: b.untold },
      };
      b.untold = 0;
      b.lastNoticeAt = now;
      // In the last dropped line's place: the batch keeps its order, and its last seq is stored.
      kept.splice(lastAt, 0, notice);
      return { events: kept, dropped, notice };
    },
  };
}
export type LogBudget = ReturnType<typeof createLogBudget>;
