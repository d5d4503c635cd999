// When scheduled backups are due (no I/O). A schedule has slots (hourly at a minute, daily
// at a time, weekly on a weekday at a time; UTC); at any moment only the latest slot that has
// passed can be due, so slots skipped while a server was offline or its environment busy
// are caught up by one backup, not one per slot.

export type BackupFrequency = "hourly" | "daily" | "weekly";
export const BACKUP_FREQUENCIES: readonly BackupFrequency[] = ["hourly", "daily", "weekly"];

export interface SlotSchedule {
  frequency: BackupFrequency;
  /** Minutes after midnight UTC, 0–1439 (hourly: only the minute of the hour counts). */
  minuteOfDay: number;
  /** ISO weekday, 1 (Monday) to 7 (Sunday); weekly only. */
  weekday: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** The latest slot at or before `t`. */
export function latestSlot(s: SlotSchedule, t: Date): Date {
  const ms = t.getTime();
  const midnight = Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate());
  if (s.frequency === "hourly") {
    const hour = ms - (ms % HOUR);
    const slot = hour + (s.minuteOfDay % 60) * MINUTE;
    return new Date(slot <= ms ? slot : slot - HOUR);
  }
  if (s.frequency === "daily") {
    const slot = midnight + s.minuteOfDay * MINUTE;
    return new Date(slot <= ms ? slot : slot - DAY);
  }
  const weekday = t.getUTCDay() || 7;
  let slot = midnight - (weekday - s.weekday) * DAY + s.minuteOfDay * MINUTE;
  if (slot > ms) slot -= 7 * DAY;
  if (slot <= ms - 7 * DAY) slot += 7 * DAY;
  return new Date(slot);
}

/** The first slot after `t`. */
export function nextSlot(s: SlotSchedule, t: Date): Date {
  const period = s.frequency === "hourly" ? HOUR : s.frequency === "daily" ? DAY : 7 * DAY;
  return new Date(latestSlot(s, t).getTime() + period);
}

export interface SlotState {
  /** Slots before this do not count (the schedule started or changed then). */
  activeSince: Date;
  /** The last slot a backup was created for. */
  lastSlotAt: Date | null;
}

/** The slot due at `now` (one backup to create), or null when none is. */
export function dueSlot(s: SlotSchedule, state: SlotState, now: Date): Date | null {
  const slot = latestSlot(s, now);
  if (slot < state.activeSince) return null;
  if (state.lastSlotAt && slot <= state.lastSlotAt) return null;
  return slot;
}

/**
 * The slot that may be missed at `now`: the latest slot more than `graceMs` old, when it
 * counts and was not reported already. It is missed when no scheduled backup taken at or
 * after it has ended (the caller asks the database).
 */
export function missedSlot(s: SlotSchedule, state: { activeSince: Date; missedSlotAt: Date | null }, now: Date, graceMs: number): Date | null {
  const slot = latestSlot(s, new Date(now.getTime() - graceMs));
  if (slot < state.activeSince) return null;
  if (state.missedSlotAt && slot <= state.missedSlotAt) return null;
  return slot;
}

/** A default time spread over 00:00–05:59 UTC by the environment's id, so a fleet's backups do not all start at once. */
export function defaultMinuteOfDay(environmentId: string): number {
  let h = 0;
  for (const c of environmentId) h = (h * 31 + c.charCodeAt(0)) >>> 0;
  return h % (6 * 60);
}
