// The grandfather-father-son retention rule of scheduled backups (no I/O): which completed
// backups to keep, as restic and borg count it: the newest backup of each of the N most
// recent days that have one, of each of the N most recent ISO weeks, of each of the N most
// recent months (UTC). A day, week or month without a backup is not counted, so a server
// that was offline for a while never loses more history because of the gap.

export interface RetentionPolicy {
  keepDaily: number;
  keepWeekly: number;
  keepMonthly: number;
}

export interface RetainedBackup {
  id: string;
  /** When it was taken (its record's creation). */
  createdAt: Date;
}

export const DEFAULT_RETENTION: RetentionPolicy = { keepDaily: 7, keepWeekly: 4, keepMonthly: 3 };

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

export function dayKey(d: Date): string {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
}

/** ISO 8601 week: weeks start on Monday; week 1 holds the year's first Thursday. */
export function isoWeekKey(d: Date): string {
  const day = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
  const weekday = day.getUTCDay() || 7; // Monday 1 … Sunday 7
  day.setUTCDate(day.getUTCDate() + 4 - weekday); // the Thursday of its week decides the year
  const yearStart = Date.UTC(day.getUTCFullYear(), 0, 1);
  const week = Math.ceil(((day.getTime() - yearStart) / 86_400_000 + 1) / 7);
  return `${day.getUTCFullYear()}-W${pad(week)}`;
}

export function monthKey(d: Date): string {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}`;
}

/** The ids the rule keeps: newest per period for the last N periods that have a backup, per rule. */
export function backupsToKeep(backups: readonly RetainedBackup[], policy: RetentionPolicy): Set<string> {
  const newestFirst = [...backups].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1));
  const keep = new Set<string>();
  const rules: [number, (d: Date) => string][] = [
    [policy.keepDaily, dayKey],
    [policy.keepWeekly, isoWeekKey],
    [policy.keepMonthly, monthKey],
  ];
  for (const [n, key] of rules) {
    const seen = new Set<string>();
    for (const b of newestFirst) {
      if (seen.size >= n) break;
      const k = key(b.createdAt);
      if (seen.has(k)) continue;
      seen.add(k);
      keep.add(b.id);
    }
  }
  return keep;
}

/** The backups the rule no longer keeps, oldest first. Give it completed scheduled backups only. */
export function backupsToPrune<T extends RetainedBackup>(backups: readonly T[], policy: RetentionPolicy): T[] {
  const keep = backupsToKeep(backups, policy);
  return backups.filter((b) => !keep.has(b.id)).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}
