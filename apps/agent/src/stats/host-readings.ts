// Cheap readings of the host for the sampler. Chosen for cost, measured: memory from one
// read of /proc/meminfo (systeminformation is kept out of the daemon: loading it costs
// ~1 MB of the agent's 60 MB budget, see bench:agent); CPU comes from os.cpus() deltas (si.currentLoad() does the same but also
// runs a blocking `cat /proc/stat | grep` shell pipeline on every call); load from
// os.loadavg(); the root filesystem from one statfs(2) (si.fsSize() spawns `df`, which
// hangs on a dead network mount). Totals (RAM, disk size) come with the same reads, so there
// is nothing static worth caching; the slow static facts (OS, CPU model) are read only at
// enrolment. Measured on a 2-core VM: 3 to 6 ms of CPU per run.
import { readFile } from "node:fs/promises";
import { cpus, loadavg } from "node:os";
import { withDeadline } from "../with-deadline.ts";
import { filesystemUsage, type FilesystemUsage } from "./filesystem-usage.ts";

export interface CpuTimes {
  busy: number;
  total: number;
}

export interface HostReadings {
  memory(): Promise<{ total_bytes: number; available_bytes: number }>;
  cpuTimes(): CpuTimes;
  loadavg(): [number, number, number];
  rootFilesystem(): Promise<FilesystemUsage>;
}

export const hostReadings: HostReadings = {
  async memory() {
    const text = await withDeadline(readFile("/proc/meminfo", "utf8"), 2_000, "memory reading");
    return parseMeminfo(text);
  },
  cpuTimes() {
    let busy = 0;
    let total = 0;
    for (const { times } of cpus()) {
      const used = times.user + times.nice + times.sys + times.irq;
      busy += used;
      total += used + times.idle;
    }
    return { busy, total };
  },
  loadavg() {
    const [one = 0, five = 0, fifteen = 0] = loadavg();
    return [one, five, fifteen];
  },
  rootFilesystem: () => filesystemUsage("/"),
};

/** Share of CPU time spent busy between two readings, 0 to 100, for the whole host. */
export function cpuPercent(before: CpuTimes, after: CpuTimes): number {
  const total = after.total - before.total;
  if (total <= 0) return 0;
  const percent = ((after.busy - before.busy) / total) * 100;
  return Math.min(100, Math.max(0, Math.round(percent * 10) / 10));
}

/** MemTotal and MemAvailable (kB in the file) as bytes. */
export function parseMeminfo(text: string): { total_bytes: number; available_bytes: number } {
  const field = (name: string) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { total_bytes: field("MemTotal"), available_bytes: field("MemAvailable") };
}
