// What to drop when unacknowledged events exceed the cap: oldest debug logs, then info,
// then warning logs, then stats. Results, steps, errors and other kinds are never dropped.
// Every drop is counted by reason, persisted, and announced (see drop-notice.ts).
import type { JournalDb } from "./database.ts";
import type { DroppedCounts, DropReason, LogLevel } from "./journal-types.ts";
import type { Meta } from "./meta.ts";

export interface Caps {
  maxPendingEvents: number;
  maxPendingBytes: number;
}

/** In drop order: rank 0 goes first. */
export const DROP_ORDER: readonly DropReason[] = ["log.debug", "log.info", "log.warning", "stats"];

// Dropping only down to the cap would make every append past it drop a line and rewrite
// the drop notice. Dropping to 90% of the cap makes a full journal drop in batches.
const LOW_WATER_FRACTION = 0.9;
// Room kept for the drop notice, so appending it never triggers another round.
export const NOTICE_RESERVE_BYTES = 512;
const SELECT_BATCH = 512;

export function dropRank(kind: string, level: LogLevel | null): number | null {
  const reason: DropReason | null =
    kind === "stats" ? "stats" : kind === "log" && level !== null && level !== "error" ? `log.${level}` : null;
  return reason === null ? null : DROP_ORDER.indexOf(reason);
}

export function lowWater(cap: number): number {
  return cap === Infinity ? Infinity : Math.floor(cap * LOW_WATER_FRACTION);
}

export function isOverCap(caps: Caps, count: number, bytes: number): boolean {
  return count > caps.maxPendingEvents || bytes > caps.maxPendingBytes;
}

export function noDrops(): DroppedCounts {
  return { "log.debug": 0, "log.info": 0, "log.warning": 0, stats: 0 };
}

/** Space a drop round gets back besides the drops: the drop notice it replaces. */
export interface Reclaimable {
  count: number;
  bytes: number;
}

export interface Retention {
  /**
   * Drops the oldest droppable events when over a cap. Runs inside the caller's
   * transaction; returns what this round dropped, or null when nothing was.
   */
  enforce(reclaimable: () => Reclaimable): DroppedCounts | null;
  droppedCount(): DroppedCounts;
}

export function createRetention(deps: { db: JournalDb; meta: Meta; caps: Caps }): Retention {
  const { db, meta, caps } = deps;
  const oldestOfRank = db.prepare<[number, number], { seq: number; bytes: number }>(
    "SELECT seq, bytes FROM events WHERE drop_rank = ? ORDER BY seq LIMIT ?",
  );
  const deleteRankUpTo = db.prepare<[number, number]>("DELETE FROM events WHERE drop_rank = ? AND seq <= ?");
  const countDrops = db.prepare<[DropReason, number]>(`
    INSERT INTO dropped (reason, count) VALUES (?, ?)
    ON CONFLICT (reason) DO UPDATE SET count = count + excluded.count`);
  const selectDrops = db.prepare<[], { reason: string; count: number }>("SELECT reason, count FROM dropped");

  function enforce(reclaimable: () => Reclaimable): DroppedCounts | null {
    let count = meta.get("pending_count");
    let bytes = meta.get("pending_bytes");
    if (!isOverCap(caps, count, bytes)) return null;

    const reclaimed = reclaimable();
    const targetCount = lowWater(caps.maxPendingEvents) - 1 + reclaimed.count;
    const targetBytes = lowWater(caps.maxPendingBytes) - NOTICE_RESERVE_BYTES + reclaimed.bytes;
    const above = () => count > targetCount || bytes > targetBytes;
    const dropped = noDrops();

    for (const [rank, reason] of DROP_ORDER.entries()) {
      while (above()) {
        const rows = oldestOfRank.all(rank, SELECT_BATCH);
        if (rows.length === 0) break;
        // Rows of one rank come in seq order, so "rank and seq <= last taken" deletes
        // exactly the rows taken; `above()` held on entry, so at least one is taken.
        let lastSeq = 0;
        for (const row of rows) {
          if (!above()) break;
          count -= 1;
          bytes -= row.bytes;
          dropped[reason] += 1;
          lastSeq = row.seq;
        }
        deleteRankUpTo.run(rank, lastSeq);
      }
    }

    const total = DROP_ORDER.reduce((sum, reason) => sum + dropped[reason], 0);
    if (total === 0) return null;
    meta.set("pending_count", count);
    meta.set("pending_bytes", bytes);
    for (const reason of DROP_ORDER) {
      if (dropped[reason] > 0) countDrops.run(reason, dropped[reason]);
    }
    return dropped;
  }

  return {
    enforce,
    droppedCount() {
      const counts = noDrops();
      for (const row of selectDrops.all()) {
        if ((DROP_ORDER as readonly string[]).includes(row.reason)) counts[row.reason as DropReason] = row.count;
      }
      return counts;
    },
  };
}
