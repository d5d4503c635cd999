// The grandfather-father-son rule: what it keeps across day, ISO-week, month and year
// boundaries, how many of each, and that it never counts a day twice.
import { describe, expect, it } from "vitest";
import { backupsToKeep, backupsToPrune, DEFAULT_RETENTION, isoWeekKey } from "./backup-retention.ts";

const at = (iso: string) => ({ id: iso, createdAt: new Date(iso) });
/** One backup a day at 02:00 UTC for `days` days ending on `last` (inclusive). */
function daily(last: string, days: number) {
  const end = new Date(`${last}T02:00:00.000Z`).getTime();
  return Array.from({ length: days }, (_, i) => at(new Date(end - i * 86_400_000).toISOString()));
}
const kept = (backups: { id: string; createdAt: Date }[], policy = DEFAULT_RETENTION) => [...backupsToKeep(backups, policy)].sort();

describe("ISO weeks", () => {
  it("start on Monday and take the year of their Thursday", () => {
    expect(isoWeekKey(new Date("2026-01-01T12:00:00Z"))).toBe("2026-W01"); // a Thursday
    expect(isoWeekKey(new Date("2025-12-29T00:00:00Z"))).toBe("2026-W01"); // Monday of that week, still 2025
    expect(isoWeekKey(new Date("2025-12-28T23:59:59Z"))).toBe("2025-W52"); // the Sunday before
    expect(isoWeekKey(new Date("2021-01-03T10:00:00Z"))).toBe("2020-W53"); // a year with 53 weeks
    expect(isoWeekKey(new Date("2024-12-30T00:00:00Z"))).toBe("2025-W01");
    expect(isoWeekKey(new Date("2026-11-23T00:00:00Z"))).toBe(isoWeekKey(new Date("2026-11-29T23:59:59Z")));
    expect(isoWeekKey(new Date("2026-11-29T23:59:59Z"))).not.toBe(isoWeekKey(new Date("2026-11-30T00:00:00Z")));
  });
});

describe("grandfather-father-son retention", () => {
  it("keeps 7 daily, 4 weekly and 3 monthly of 100 daily backups: 11 in all, the right ones", () => {
    // Ends on Thursday 2026-11-26; weeks start Mondays 23, 16, 9, 2 Nov; months Nov, Oct, Sep.
    const all = daily("2026-11-26", 100);
    const keep = kept(all);
    const days = ["20", "21", "22", "23", "24", "25", "26"].map((d) => `2026-11-${d}T02:00:00.000Z`);
    // Newest of each of the 4 latest weeks: Thu 26 Nov (this week), Sun 22, Sun 15, Sun 8 Nov.
    const weeks = ["2026-11-15T02:00:00.000Z", "2026-11-08T02:00:00.000Z"];
    // Newest of each of the 3 latest months: 26 Nov, 31 Oct, 30 Sep.
    const months = ["2026-10-31T02:00:00.000Z", "2026-09-30T02:00:00.000Z"];
    expect(keep).toEqual([...days, ...weeks, ...months].sort());
    expect(backupsToPrune(all, DEFAULT_RETENTION)).toHaveLength(100 - 11);
  });

  it("keeps the newest of a day that has several backups, and counts that day once", () => {
    const all = [at("2026-11-26T02:00:00.000Z"), at("2026-11-26T14:00:00.000Z"), at("2026-11-25T02:00:00.000Z"), at("2026-11-24T02:00:00.000Z")];
    expect(kept(all, { keepDaily: 2, keepWeekly: 0, keepMonthly: 0 })).toEqual(["2026-11-25T02:00:00.000Z", "2026-11-26T14:00:00.000Z"]);
  });

  it("counts days that have a backup, so a gap (server offline) never prunes more", () => {
    const all = [at("2026-11-26T02:00:00.000Z"), ...daily("2026-11-10", 6)];
    expect(kept(all, { keepDaily: 7, keepWeekly: 0, keepMonthly: 0 })).toHaveLength(7);
  });

  it("a week across a month boundary is one week; the months are two", () => {
    // Monday 2026-11-30 to Sunday 2026-12-06 is one ISO week spanning November and December.
    const all = [at("2026-12-02T02:00:00.000Z"), at("2026-11-30T02:00:00.000Z"), at("2026-11-29T02:00:00.000Z")];
    expect(kept(all, { keepDaily: 0, keepWeekly: 1, keepMonthly: 0 })).toEqual(["2026-12-02T02:00:00.000Z"]);
    expect(kept(all, { keepDaily: 0, keepWeekly: 2, keepMonthly: 0 })).toEqual(["2026-11-29T02:00:00.000Z", "2026-12-02T02:00:00.000Z"]);
    expect(kept(all, { keepDaily: 0, keepWeekly: 0, keepMonthly: 2 })).toEqual(["2026-11-30T02:00:00.000Z", "2026-12-02T02:00:00.000Z"]);
  });

  it("a week across a year boundary is one week (ISO), months and years split it", () => {
    const all = [at("2027-01-02T02:00:00.000Z"), at("2026-12-31T02:00:00.000Z"), at("2026-12-27T02:00:00.000Z")];
    // 2026-12-28 (Mon) to 2027-01-03 (Sun) is 2026-W53.
    expect(kept(all, { keepDaily: 0, keepWeekly: 1, keepMonthly: 0 })).toEqual(["2027-01-02T02:00:00.000Z"]);
    expect(kept(all, { keepDaily: 0, keepWeekly: 0, keepMonthly: 2 })).toEqual(["2026-12-31T02:00:00.000Z", "2027-01-02T02:00:00.000Z"]);
  });

  it("days are UTC days: 23:59 and 00:01 are two days", () => {
    const all = [at("2026-11-26T00:01:00.000Z"), at("2026-11-25T23:59:00.000Z")];
    expect(kept(all, { keepDaily: 2, keepWeekly: 0, keepMonthly: 0 })).toHaveLength(2);
    expect(kept(all, { keepDaily: 1, keepWeekly: 0, keepMonthly: 0 })).toEqual(["2026-11-26T00:01:00.000Z"]);
  });

  it("prunes nothing while there are fewer backups than the rule keeps, and keeps the newest always", () => {
    const all = daily("2026-11-26", 5);
    expect(backupsToPrune(all, DEFAULT_RETENTION)).toEqual([]);
    expect(backupsToKeep(daily("2026-11-26", 30), { keepDaily: 1, keepWeekly: 0, keepMonthly: 0 })).toEqual(new Set(["2026-11-26T02:00:00.000Z"]));
  });

  it("prunes oldest first and is independent of input order", () => {
    const all = daily("2026-11-26", 40);
    const shuffled = [...all].reverse();
    const a = backupsToPrune(all, DEFAULT_RETENTION).map((b) => b.id);
    expect(backupsToPrune(shuffled, DEFAULT_RETENTION).map((b) => b.id)).toEqual(a);
    expect(a).toEqual([...a].sort());
  });
});
