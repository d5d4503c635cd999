// RSS and CPU time of the benchmark's processes, from /proc (Linux). On a 2-core machine the
// control plane, PostgreSQL and the simulated agents share the cores, so every phase reports
// who used them.
import { readdir, readFile } from "node:fs/promises";

/** Clock ticks per second of /proc/<pid>/stat times; 100 on every mainstream Linux build. */
const HZ = 100;

export async function rssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

/** Soft limit on open files of this process. */
export async function openFilesLimit(): Promise<number> {
  const limits = await readFile("/proc/self/limits", "utf8");
  const soft = /^Max open files\s+(\S+)/m.exec(limits)?.[1];
  return soft === undefined || soft === "unlimited" ? Number.POSITIVE_INFINITY : Number(soft);
}

async function cpuSeconds(pid: number | string): Promise<{ name: string; ppid: number; s: number } | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { name, ppid: Number(f[1]), s: (Number(f[11]) + Number(f[12])) / HZ };
  } catch {
    return undefined;
  }
}

export interface CpuSnapshot {
  at: number;
  /** Seconds of CPU per named group. */
  groups: Record<string, number>;
  machineBusy: number;
  machineTotal: number;
  /** Seconds the hypervisor ran something else on this VM's cores (all cores summed). */
  steal: number;
  /** CPU seconds per PostgreSQL process: backends come and go (pools open and close them). */
  postgres: Map<string, number>;
}

/** The postmaster running on this data directory, if it is on this machine. */
export async function findPostmaster(dataDir: string): Promise<number | undefined> {
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = (await readFile(`/proc/${entry}/cmdline`, "utf8")).split("\0");
      if (args.some((a) => a.endsWith("/postgres")) && args.includes(dataDir)) return Number(entry);
    } catch {
      // Gone between readdir and read.
    }
  }
  return undefined;
}

/**
 * Groups: named pids, plus "postgres": the postmaster and its children when known, else every
 * process named postgres on the machine (a shared server counts other databases' work too).
 */
export async function cpuSnapshot(pids: Record<string, number[]>, postmaster: number | undefined): Promise<CpuSnapshot> {
  const groups: Record<string, number> = {};
  for (const [group, list] of Object.entries(pids)) {
    let s = 0;
    for (const pid of list) s += (await cpuSeconds(pid))?.s ?? 0;
    groups[group] = s;
  }
  const postgres = new Map<string, number>();
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await cpuSeconds(entry);
    if (!stat) continue;
    if (postmaster === undefined ? stat.name === "postgres" : Number(entry) === postmaster || stat.ppid === postmaster) postgres.set(entry, stat.s);
  }
  const line = (await readFile("/proc/stat", "utf8")).split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = line;
  const busy = user + nice + system + irq + softirq + steal;
  return { at: performance.now(), groups, machineBusy: busy / HZ, machineTotal: (busy + idle + iowait) / HZ, steal: steal / HZ, postgres };
}

/**
 * Percent of one core used by each group between two snapshots (2 cores = 200 %), "steal"
 * for time the hypervisor gave this VM's cores to someone else, "other" for everything else
 * on the machine (other sessions' work, interrupts), and "machine" as the share of all cores
 * that was busy (steal included).
 */
export function cpuUse(a: CpuSnapshot, b: CpuSnapshot, cores: number): Record<string, number> {
  const wall = (b.at - a.at) / 1000;
  const out: Record<string, number> = {};
  let ours = 0;
  for (const k of Object.keys(b.groups)) {
    const used = (b.groups[k] ?? 0) - (a.groups[k] ?? 0);
    ours += used;
    out[k] = Math.round((used / wall) * 100);
  }
  // A process that ended between the snapshots took its last CPU seconds with it (they show
  // as other); one that started counts from zero.
  let pg = 0;
  for (const [pid, seconds] of b.postgres) pg += seconds - (a.postgres.get(pid) ?? 0);
  ours += pg;
  out.postgres = Math.round((pg / wall) * 100);
  const busyShare = (b.machineBusy - a.machineBusy) / (b.machineTotal - a.machineTotal);
  out.machine = Math.round(busyShare * 100);
  const steal = b.steal - a.steal;
  out.steal = Math.round((steal / wall) * 100);
  out.other = Math.max(0, Math.round(((busyShare * cores * wall - ours - steal) / wall) * 100));
  return out;
}
