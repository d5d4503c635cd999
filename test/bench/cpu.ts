// Who used the CPU during a run, from /proc (Linux): the server under test, PostgreSQL,
// this process (autocannon), and everything else on the machine. On 2 shared cores this
// tells a slow stack from a starved one.
import { readdir, readFile } from "node:fs/promises";

export interface CpuSnapshot {
  /** Jiffies of the whole machine: busy (steal included), stolen by the hypervisor, all. */
  machineBusy: number;
  machineSteal: number;
  machineIrq: number;
  machineTotal: number;
  /** utime + stime in jiffies, per pid. */
  byPid: Map<number, ProcStat>;
}

interface ProcStat {
  ppid: number;
  jiffies: number;
  name: string;
}

export interface CpuUse {
  /** Share of the machine's capacity (all cores = 100 %). */
  busyPercent: number;
  /** Taken by the hypervisor for other guests: this VM's cores were not all ours. */
  stealPercent: number;
  /** Interrupt and softirq time, which no process is charged for (loopback TCP, disk completions). */
  irqPercent: number;
  serverPercent: number;
  postgresPercent: number;
  loadGeneratorPercent: number;
  otherPercent: number;
  /** The biggest consumers outside the benchmark, e.g. "kworker/1:2H 12%". */
  topOthers: string[];
}

async function readStat(pid: string): Promise<ProcStat | undefined> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses; the fields after the last ")" do not.
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const name = text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"));
    return { ppid: Number(fields[1]), jiffies: Number(fields[11]) + Number(fields[12]), name };
  } catch {
    return undefined; // Gone between readdir and read.
  }
}

export async function cpuSnapshot(): Promise<CpuSnapshot | undefined> {
  let machine: string;
  try {
    machine = await readFile("/proc/stat", "utf8");
  } catch {
    return undefined;
  }
  // user nice system idle iowait irq softirq steal (guest time is already in user and nice)
  const cpu = machine.split("\n")[0]!.split(/\s+/).slice(1, 9).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0);
  const byPid = new Map<number, ProcStat>();
  for (const pid of await readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const s = await readStat(pid);
    if (s) byPid.set(Number(pid), s);
  }
  return { machineBusy: total - idle, machineSteal: cpu[7] ?? 0, machineIrq: (cpu[5] ?? 0) + (cpu[6] ?? 0), machineTotal: total, byPid };
}

/** Parent pid of a process, to find the postmaster from one backend. */
export async function parentOf(pid: number): Promise<number | undefined> {
  return (await readStat(String(pid)))?.ppid;
}

/** Jiffies a process used between two snapshots. */
const usedBetween = (before: CpuSnapshot, after: CpuSnapshot, pid: number) => Math.max(0, (after.byPid.get(pid)?.jiffies ?? 0) - (before.byPid.get(pid)?.jiffies ?? 0));

/** Jiffies PostgreSQL used between two snapshots: the postmaster and its children (backends, workers). */
export function postgresUsed(before: CpuSnapshot, after: CpuSnapshot, postmaster: number): number {
  const used = (pid: number) => usedBetween(before, after, pid);
  let sum = used(postmaster);
  for (const [pid, s] of after.byPid) if (s.ppid === postmaster) sum += used(pid);
  return sum;
}

export function cpuUse(before: CpuSnapshot, after: CpuSnapshot, pids: { server: number; postmaster?: number; self: number }): CpuUse {
  const used = (pid: number) => usedBetween(before, after, pid);
  const total = Math.max(1, after.machineTotal - before.machineTotal);
  const busy = after.machineBusy - before.machineBusy;
  const steal = after.machineSteal - before.machineSteal;
  const irq = after.machineIrq - before.machineIrq;
  const postgres = pids.postmaster === undefined ? 0 : postgresUsed(before, after, pids.postmaster);
  const server = used(pids.server);
  const self = used(pids.self);
  const pct = (j: number) => (100 * j) / total;
  const ours = new Set([pids.server, pids.self, pids.postmaster]);
  const others = [...after.byPid]
    .filter(([pid, s]) => !ours.has(pid) && s.ppid !== pids.postmaster)
    .map(([pid, s]) => ({ name: s.name, used: used(pid) }))
    .sort((a, b) => b.used - a.used)
    .slice(0, 3)
    .filter((o) => o.used > 0);
  return {
    busyPercent: pct(busy),
    stealPercent: pct(steal),
    irqPercent: pct(irq),
    serverPercent: pct(server),
    postgresPercent: pct(postgres),
    loadGeneratorPercent: pct(self),
    otherPercent: pct(Math.max(0, busy - steal - irq - server - postgres - self)),
    topOthers: others.map((o) => `${o.name} ${pct(o.used).toFixed(0)}%`),
  };
}
