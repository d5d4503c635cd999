import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { hostReadings, parseMeminfo } from "./host-readings.ts";

describe("memory readings from /proc/meminfo", () => {
  it("parses MemTotal and MemAvailable into bytes", () => {
    const text = "MemTotal:       24567844 kB\nMemFree:         1000000 kB\nMemAvailable:   20000000 kB\nBuffers: 1 kB\n";
    expect(parseMeminfo(text)).toEqual({ total_bytes: 24567844 * 1024, available_bytes: 20000000 * 1024 });
  });

  it("reads this machine: available is positive and below the total", async () => {
    const mem = await hostReadings.memory();
    expect(mem.total_bytes).toBeGreaterThan(0);
    expect(mem.available_bytes).toBeGreaterThan(0);
    expect(mem.available_bytes).toBeLessThanOrEqual(mem.total_bytes);
    expect(readFileSync("/proc/meminfo", "utf8")).toContain("MemTotal");
  });
});
