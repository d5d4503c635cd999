// The warning log that tells the control plane and the user how many events were dropped.
// At most one is pending: each drop round replaces the unacknowledged previous notice with
// one that carries its counts too, so a long outage yields one notice, not one per round.
import type { JournalDb } from "./database.ts";
import type { DroppedCounts, EventInput, JsonObject } from "./journal-types.ts";
import type { Meta } from "./meta.ts";
import type { Caps, Reclaimable } from "./retention.ts";
import { DROP_ORDER, NOTICE_RESERVE_BYTES, isOverCap } from "./retention.ts";

// Shaped as the protocol's log event body, so the link sends it like any other log line.
interface NoticeBody extends JsonObject {
  command_id: null;
  deployment_id: null;
  step: null;
  message: string;
  data: {
    source: "journal";
    /** When the first drop counted in `dropped` happened. */
    since: string;
    dropped: DroppedCounts;
    dropped_total: DroppedCounts;
  };
}

export interface DropNotice {
  /** The pending notice that the next one will replace, if any. */
  pending(): Reclaimable;
  /** Runs inside the drop's transaction; returns the notice to append (never droppable). */
  supersede(dropped: DroppedCounts, total: DroppedCounts): EventInput;
  appended(seq: number): void;
}

export function createDropNotice(deps: {
  db: JournalDb;
  meta: Meta;
  caps: Caps;
  now: () => Date;
}): DropNotice {
  const { db, meta, caps, now } = deps;
  const selectRow = db.prepare<[number], { body: string; bytes: number }>(
    "SELECT body, bytes FROM events WHERE seq = ?",
  );
  const deleteRow = db.prepare<[number]>("DELETE FROM events WHERE seq = ?");

  // Absent once acknowledged: the control plane has it, so the next one starts afresh.
  function previous(): { seq: number; body: string; bytes: number } | null {
    const seq = meta.get("drop_notice_seq");
    const row = seq > 0 ? selectRow.get(seq) : undefined;
    return row ? { seq, ...row } : null;
  }

  return {
    pending() {
      const notice = previous();
      return notice ? { count: 1, bytes: notice.bytes } : { count: 0, bytes: 0 };
    },
    supersede(dropped, total) {
      const at = now().toISOString();
      let since = at;
      const merged = { ...dropped };
      const replaced = previous();
      if (replaced) {
        const { data } = JSON.parse(replaced.body) as NoticeBody;
        since = data.since;
        for (const reason of DROP_ORDER) merged[reason] += data.dropped[reason] ?? 0;
        deleteRow.run(replaced.seq);
        meta.add("pending_count", -1);
        meta.add("pending_bytes", -replaced.bytes);
      }
      const stillOver = isOverCap(
        caps,
        meta.get("pending_count") + 1,
        meta.get("pending_bytes") + NOTICE_RESERVE_BYTES,
      );
      return { kind: "log", ts: at, level: "warning", body: noticeBody(merged, total, since, stillOver) };
    },
    appended: (seq) => meta.set("drop_notice_seq", seq),
  };
}

function noticeBody(dropped: DroppedCounts, total: DroppedCounts, since: string, stillOver: boolean): NoticeBody {
  const lines = (n: number, level: string) => `${n} ${level} log line${n === 1 ? "" : "s"}`;
  const parts: string[] = [];
  if (dropped["log.debug"] > 0) parts.push(lines(dropped["log.debug"], "debug"));
  if (dropped["log.info"] > 0) parts.push(lines(dropped["log.info"], "info"));
  if (dropped["log.warning"] > 0) parts.push(lines(dropped["log.warning"], "warning"));
  if (dropped.stats > 0) parts.push(`${dropped.stats} stats sample${dropped.stats === 1 ? "" : "s"}`);
  const tail = stillOver ? "; what remains is never dropped, so the journal is over its cap" : "";
  return {
    command_id: null,
    deployment_id: null,
    step: null,
    message: `Agent journal full: dropped ${parts.join(", ")} since ${since}${tail}.`,
    data: { source: "journal", since, dropped, dropped_total: total },
  };
}
