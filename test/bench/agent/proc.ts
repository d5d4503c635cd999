// Memory and CPU time of one process from /proc (Linux), as `ps` and `top` would read them.
import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import { promisify } from "node:util";

const exec = promisify(execFile);

export interface MemoryReading {
  /** VmRSS: what the goal is about, what `ps`/`top` show. */
  rssKb: number;
  /** RssAnon: heap, stacks, malloc: private to this process. */
  anonKb: number;
  /** RssFile: mapped files (the node binary's pages, the native addons), shared with any other node. */
  fileKb: number;
  /** VmHWM: the peak RSS since the process started. */
  peakKb: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times. */
export async function clockTicksPerSecond(): Promise<number> {
  const { stdout } = await exec("getconf", ["CLK_TCK"]);
  const hz = Number(stdout.trim());
  if (!Number.isInteger(hz) || hz <= 0) throw new Error(`getconf CLK_TCK printed ${JSON.stringify(stdout)}`);
  return hz;
}

export async function readMemory(pid: number): Promise<MemoryReading> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = (field: string) => {
    const value = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1];
    if (value === undefined) throw new Error(`no ${field} in /proc/${pid}/status`);
    return Number(value);
  };
  return { rssKb: kb("VmRSS"), anonKb: kb("RssAnon"), fileKb: kb("RssFile"), peakKb: kb("VmHWM") };
}

/** utime + stime of the process (all its threads), in clock ticks. */
export async function readCpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // The command name may hold spaces and parentheses; the fields after the last ")" do not.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 of proc(5), counted from "state" (field 3) here.
  return Number(fields[11]) + Number(fields[12]);
}

/** Threads of the process (V8's platform workers, libuv's pool once used, ...). */
export async function readThreads(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  return Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN);
}
