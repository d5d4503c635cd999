// CPU time of processes from /proc (Linux), to show what the product's bookkeeping costs the
// machine during a deploy: the agent, this process (the control plane and the poller, or the
// direct run), the control plane's PostgreSQL (its postmaster and every backend).
import { readdir, readFile } from "node:fs/promises";

/** USER_HZ: 100 on every Linux the benchmark runs on (getconf CLK_TCK). */
const TICKS_PER_SECOND = 100;

interface Stat {
  ppid: number;
  cpuTicks: number;
}

async function stat(pid: number): Promise<Stat | null> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: split after its last ")".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

export async function parentOf(pid: number): Promise<number | null> {
  return (await stat(pid))?.ppid ?? null;
}

/** CPU ms used so far by each pid (and, for `withChildren`, its live children), keyed by the given name. */
export async function cpuSnapshot(pids: Record<string, { pid: number; withChildren?: boolean }>): Promise<Record<string, number>> {
  const wanted = Object.values(pids).filter((p) => p.withChildren).map((p) => p.pid);
  const children = new Map<number, number[]>();
  if (wanted.length > 0) {
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const s = await stat(Number(entry));
      if (s && wanted.includes(s.ppid)) children.set(s.ppid, [...(children.get(s.ppid) ?? []), Number(entry)]);
    }
  }
  const out: Record<string, number> = {};
  for (const [name, { pid, withChildren }] of Object.entries(pids)) {
    let ticks = (await stat(pid))?.cpuTicks ?? 0;
    if (withChildren) for (const child of children.get(pid) ?? []) ticks += (await stat(child))?.cpuTicks ?? 0;
    out[name] = (ticks * 1000) / TICKS_PER_SECOND;
  }
  return out;
}

export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.keys(after).map((k) => [k, Math.max(0, (after[k] ?? 0) - (before[k] ?? 0))]));
}
