// The schedule settings' rules: a change keeps the fields it leaves out, times are HH:MM UTC,
// weekdays ISO, and a retention that would keep nothing is refused with a clear error.
import { describe, expect, it } from "vitest";
import { DomainError } from "../../lib/errors.ts";
import { applyInput, defaultSettings, scheduleView } from "./backup-schedules.service.ts";

const ENV = "3f2a9c1e-0b7d-4e5f-8a6b-1c2d3e4f5a6b";
const codeOf = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof DomainError ? `${err.code}: ${err.message}` : "not a DomainError";
  }
  return "no error";
};

describe("backup schedule settings", () => {
  it("default: on, daily at a night time, 7/4/3", () => {
    const s = defaultSettings(ENV);
    expect(s).toMatchObject({ enabled: true, frequency: "daily", keepDaily: 7, keepWeekly: 4, keepMonthly: 3 });
    expect(s.minuteOfDay).toBeLessThan(360);
  });

  it("a change keeps what it leaves out", () => {
    const s = applyInput(defaultSettings(ENV), { time: "23:05", retention: { monthly: 12 } });
    expect(s).toMatchObject({ enabled: true, frequency: "daily", minuteOfDay: 23 * 60 + 5, keepDaily: 7, keepWeekly: 4, keepMonthly: 12 });
    const v = scheduleView(ENV, applyInput(s, { frequency: "weekly", weekday: 1 }), undefined, new Date("2026-11-26T12:00:00.000Z"));
    expect(v).toMatchObject({ frequency: "weekly", weekday: 1, time: "23:05", is_default: true, next_run_at: "2026-11-30T23:05:00.000Z" });
  });

  it("refuses a time that is not HH:MM, a weekday outside 1-7, counts out of range and a retention that keeps nothing", () => {
    const d = defaultSettings(ENV);
    expect(codeOf(() => applyInput(d, { time: "24:00" }))).toMatch(/^backup_schedule_invalid: time is HH:MM in UTC/);
    expect(codeOf(() => applyInput(d, { time: "3:00" }))).toMatch(/^backup_schedule_invalid/);
    expect(codeOf(() => applyInput(d, { weekday: 0 }))).toMatch(/^backup_schedule_invalid: weekday is 1 \(Monday\) to 7 \(Sunday\)/);
    expect(codeOf(() => applyInput(d, { retention: { daily: -1 } }))).toMatch(/^backup_schedule_invalid: retention.daily/);
    expect(codeOf(() => applyInput(d, { retention: { daily: 0, weekly: 0, monthly: 0 } }))).toMatch(/^backup_schedule_invalid: A retention that keeps no backup/);
    expect(codeOf(() => applyInput(d, { retention: { daily: 0, weekly: 0, monthly: 1 } }))).toBe("no error");
  });

  it("a schedule turned off has no next run", () => {
    expect(scheduleView(ENV, applyInput(defaultSettings(ENV), { enabled: false }), undefined, new Date()).next_run_at).toBeNull();
  });
});
