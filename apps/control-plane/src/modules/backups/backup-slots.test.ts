// Due-slot computation: the latest slot of hourly, daily and weekly schedules, one catch-up
// backup for slots skipped, nothing before a schedule started, and the missed slot.
import { describe, expect, it } from "vitest";
import { defaultMinuteOfDay, dueSlot, latestSlot, missedSlot, nextSlot, type SlotSchedule } from "./backup-slots.ts";

const d = (iso: string) => new Date(iso);
const DAILY_0300: SlotSchedule = { frequency: "daily", minuteOfDay: 180, weekday: 7 };

describe("latest slot", () => {
  it("daily: today's time once it has passed, else yesterday's (across a month and a year)", () => {
    expect(latestSlot(DAILY_0300, d("2026-11-26T03:00:00.000Z")).toISOString()).toBe("2026-11-26T03:00:00.000Z");
    expect(latestSlot(DAILY_0300, d("2026-11-26T02:59:59.999Z")).toISOString()).toBe("2026-11-25T03:00:00.000Z");
    expect(latestSlot(DAILY_0300, d("2026-12-01T01:00:00.000Z")).toISOString()).toBe("2026-11-30T03:00:00.000Z");
    expect(latestSlot(DAILY_0300, d("2027-01-01T00:00:00.000Z")).toISOString()).toBe("2026-12-31T03:00:00.000Z");
  });

  it("hourly: the minute of this hour or the last", () => {
    const s: SlotSchedule = { frequency: "hourly", minuteOfDay: 15, weekday: 7 };
    expect(latestSlot(s, d("2026-11-26T10:20:00.000Z")).toISOString()).toBe("2026-11-26T10:15:00.000Z");
    expect(latestSlot(s, d("2026-11-26T10:10:00.000Z")).toISOString()).toBe("2026-11-26T09:15:00.000Z");
    expect(nextSlot(s, d("2026-11-26T10:20:00.000Z")).toISOString()).toBe("2026-11-26T11:15:00.000Z");
  });

  it("weekly: the weekday's time in this week or the last (ISO weekdays, Sunday 7)", () => {
    const sunday: SlotSchedule = { frequency: "weekly", minuteOfDay: 60, weekday: 7 };
    // 2026-11-26 is a Thursday; the last Sunday is the 22nd.
    expect(latestSlot(sunday, d("2026-11-26T12:00:00.000Z")).toISOString()).toBe("2026-11-22T01:00:00.000Z");
    expect(latestSlot(sunday, d("2026-11-29T00:59:00.000Z")).toISOString()).toBe("2026-11-22T01:00:00.000Z");
    expect(latestSlot(sunday, d("2026-11-29T01:00:00.000Z")).toISOString()).toBe("2026-11-29T01:00:00.000Z");
    const monday: SlotSchedule = { frequency: "weekly", minuteOfDay: 0, weekday: 1 };
    expect(latestSlot(monday, d("2026-11-29T23:00:00.000Z")).toISOString()).toBe("2026-11-23T00:00:00.000Z");
    expect(latestSlot(monday, d("2026-11-30T00:00:00.000Z")).toISOString()).toBe("2026-11-30T00:00:00.000Z");
  });
});

describe("due slot", () => {
  const since = d("2026-11-20T12:00:00.000Z");
  it("is the latest slot once it passes, and not again after it was taken", () => {
    expect(dueSlot(DAILY_0300, { activeSince: since, lastSlotAt: d("2026-11-25T03:00:00.000Z") }, d("2026-11-26T02:59:00.000Z"))).toBeNull();
    const slot = dueSlot(DAILY_0300, { activeSince: since, lastSlotAt: d("2026-11-25T03:00:00.000Z") }, d("2026-11-26T03:00:00.000Z"));
    expect(slot?.toISOString()).toBe("2026-11-26T03:00:00.000Z");
    expect(dueSlot(DAILY_0300, { activeSince: since, lastSlotAt: slot }, d("2026-11-26T23:00:00.000Z"))).toBeNull();
  });

  it("slots skipped for three days are caught up by one backup: the latest slot", () => {
    const slot = dueSlot(DAILY_0300, { activeSince: since, lastSlotAt: d("2026-11-22T03:00:00.000Z") }, d("2026-11-25T18:00:00.000Z"));
    expect(slot?.toISOString()).toBe("2026-11-25T03:00:00.000Z");
    expect(dueSlot(DAILY_0300, { activeSince: since, lastSlotAt: slot }, d("2026-11-25T18:01:00.000Z"))).toBeNull();
  });

  it("nothing before the schedule started: the first slot is the next one", () => {
    const start = d("2026-11-26T03:30:00.000Z");
    expect(dueSlot(DAILY_0300, { activeSince: start, lastSlotAt: null }, d("2026-11-26T12:00:00.000Z"))).toBeNull();
    expect(dueSlot(DAILY_0300, { activeSince: start, lastSlotAt: null }, d("2026-11-27T03:00:00.000Z"))?.toISOString()).toBe("2026-11-27T03:00:00.000Z");
  });
});

describe("missed slot", () => {
  const state = { activeSince: d("2026-11-20T00:00:00.000Z"), missedSlotAt: null };
  it("is a slot older than the grace period, reported once", () => {
    const grace = 2 * 3600_000;
    expect(missedSlot(DAILY_0300, state, d("2026-11-26T04:59:00.000Z"), grace)?.toISOString()).toBe("2026-11-25T03:00:00.000Z");
    expect(missedSlot(DAILY_0300, state, d("2026-11-26T05:00:00.000Z"), grace)?.toISOString()).toBe("2026-11-26T03:00:00.000Z");
    expect(missedSlot(DAILY_0300, { ...state, missedSlotAt: d("2026-11-26T03:00:00.000Z") }, d("2026-11-26T09:00:00.000Z"), grace)).toBeNull();
  });
});

it("default times spread over 00:00–05:59 UTC and are stable per environment", () => {
  const ids = Array.from({ length: 200 }, (_, i) => `3f2a9c1e-0b7d-4e5f-8a6b-${String(i).padStart(12, "0")}`);
  const minutes = ids.map(defaultMinuteOfDay);
  expect(Math.min(...minutes)).toBeGreaterThanOrEqual(0);
  expect(Math.max(...minutes)).toBeLessThan(360);
  expect(new Set(minutes).size).toBeGreaterThan(50);
  expect(defaultMinuteOfDay(ids[0]!)).toBe(minutes[0]);
});
