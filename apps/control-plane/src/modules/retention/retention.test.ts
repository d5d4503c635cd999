// When a month partition expires, and the retention settings as an operator writes them.
import { describe, expect, it } from "vitest";
import { retentionSettings } from "../../config.ts";
import { expiryCutoff, monthExpired, monthStart, partitionName, tableOfPartition } from "./retention.ts";

describe("a month partition", () => {
  const now = new Date("2026-11-26T22:00:00.000Z");

  it("expires once its whole month is older than the retention, not when only its first days are", () => {
    const cutoff = expiryCutoff(90, now)!; // 2026-08-28T22:00Z
    expect(monthExpired(new Date("2026-07-01T00:00:00.000Z"), cutoff)).toBe(true); // ended 2026-08-01
    expect(monthExpired(new Date("2026-08-01T00:00:00.000Z"), cutoff)).toBe(false); // its last days are inside
    expect(monthExpired(new Date("2026-11-01T00:00:00.000Z"), cutoff)).toBe(false);
  });

  it("expires exactly when the cutoff reaches its end", () => {
    const end = new Date("2026-09-01T00:00:00.000Z");
    expect(monthExpired(new Date("2026-08-01T00:00:00.000Z"), expiryCutoff(1, new Date(end.getTime() + 86_400_000)))).toBe(true);
    expect(monthExpired(new Date("2026-08-01T00:00:00.000Z"), expiryCutoff(1, new Date(end.getTime() + 86_400_000 - 1)))).toBe(false);
  });

  it("never expires with a retention of 0", () => {
    expect(expiryCutoff(0, now)).toBeNull();
    expect(monthExpired(new Date("1999-01-01T00:00:00.000Z"), expiryCutoff(0, now))).toBe(false);
  });

  it("is named by its UTC month, across a year's end", () => {
    expect(partitionName("deployment_logs", monthStart(new Date("2026-12-31T23:59:59.999Z"), 1))).toBe("deployment_logs_p202701");
    expect(partitionName("agent_events", monthStart(new Date("2027-01-01T00:00:00.000Z"), -1))).toBe("agent_events_p202612");
    expect(tableOfPartition(partitionName("deployment_logs", monthStart(new Date("2027-01-01T00:00:00.000Z"))))).toBe("deployment_logs");
  });
});

describe("BERTH_LOG_RETENTION_DAYS, BERTH_AGENT_EVENT_RETENTION_DAYS and BERTH_COMMAND_RETENTION_DAYS", () => {
  it("default to 90, 30 and 90 days, take 0 (keep) and whole days, and refuse anything else naming the setting", () => {
    expect(retentionSettings({})).toEqual({ logDays: 90, agentEventDays: 30, commandDays: 90 });
    expect(retentionSettings({ BERTH_LOG_RETENTION_DAYS: "0", BERTH_AGENT_EVENT_RETENTION_DAYS: "7", BERTH_COMMAND_RETENTION_DAYS: "0" })).toEqual({
      logDays: 0,
      agentEventDays: 7,
      commandDays: 0,
    });
    for (const bad of ["-1", "1.5", "90d", "forever", "01"]) {
      expect(() => retentionSettings({ BERTH_LOG_RETENTION_DAYS: bad }), bad).toThrow(/BERTH_LOG_RETENTION_DAYS must be a whole number of days/);
      expect(() => retentionSettings({ BERTH_AGENT_EVENT_RETENTION_DAYS: bad }), bad).toThrow(/BERTH_AGENT_EVENT_RETENTION_DAYS/);
      expect(() => retentionSettings({ BERTH_COMMAND_RETENTION_DAYS: bad }), bad).toThrow(/BERTH_COMMAND_RETENTION_DAYS/);
    }
  });
});
