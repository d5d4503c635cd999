import { describe, expect, it } from "vitest";
import { capacityOf } from "./capacity.ts";

const host = { cpuCores: 8, ramMb: 32_768, diskGb: 500 };
const none = { cpuCores: 0, ramMb: 0, diskGb: 0 };

describe("capacityOf", () => {
  it("counts default environments that fit on an empty host by its tightest resource", () => {
    // 8 cores, 16 x 2 GB, 25 x 20 GB: cores bound it.
    expect(capacityOf(host, none, null)).toMatchObject({ fits_default: 8, room: "room", free_cpu_cores: 8 });
  });

  it("subtracts what the environments were given", () => {
    expect(capacityOf(host, { cpuCores: 7, ramMb: 4096, diskGb: 40 }, null)).toMatchObject({ fits_default: 1, free_cpu_cores: 1 });
    expect(capacityOf(host, { cpuCores: 8, ramMb: 4096, diskGb: 40 }, null)).toMatchObject({ fits_default: 0, room: "full" });
  });

  it("is bounded by live usage when the host is busier than its allocations say", () => {
    const live = { ramUsedMb: 31_000, ramTotalMb: 32_768, diskUsedGb: 100, diskTotalGb: 500 };
    expect(capacityOf(host, none, live)).toMatchObject({ fits_default: 0, room: "full", free_ram_mb: 1768 });
  });

  it("never goes negative when over-committed", () => {
    const c = capacityOf(host, { cpuCores: 12, ramMb: 40_000, diskGb: 900 }, null);
    expect(c).toMatchObject({ free_cpu_cores: 0, free_ram_mb: 0, free_disk_gb: 0, fits_default: 0 });
  });

  it("says unknown for a server that never reported its size", () => {
    expect(capacityOf({ cpuCores: 0, ramMb: 0, diskGb: 0 }, none, null).room).toBe("unknown");
  });
});
