// One bundled agent, enrolled and run as its own process with `node <flags> berth-agent.cjs`,
// in the environment systemd would give it (PATH and HOME only: no NODE_OPTIONS inherited
// from the benchmark, which runs under tsx).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { AgentBundle } from "./bundle.ts";

const exec = promisify(execFile);
const OUTPUT_KEPT = 20_000;

/** NAME=value among a variant's flags is a variable of the launch environment (e.g. MALLOC_ARENA_MAX=2). */
export const isEnv = (flag: string) => /^[A-Z_][A-Z0-9_]*=/.test(flag);

/**
 * A preload (node --require) that appends process.memoryUsage() and V8's heap figures to
 * BENCH_AGENT_MEMLOG_FILE every 5 s: what the RSS is made of, from inside the process.
 */
const MEMLOG_PRELOAD = `"use strict";
const fs = require("node:fs");
const v8 = require("node:v8");
const file = process.env.BENCH_AGENT_MEMLOG_FILE;
function write() {
  const spaces = {};
  for (const s of v8.getHeapSpaceStatistics()) spaces[s.space_name] = { used: s.space_used_size, committed: s.physical_space_size };
  const code = v8.getHeapCodeStatistics();
  fs.appendFileSync(file, JSON.stringify({ at: Date.now(), ...process.memoryUsage(), spaces, code }) + "\\n");
}
setInterval(write, 5000).unref();
`;

export interface MemlogRecord {
  at: number;
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
  spaces: Record<string, { used: number; committed: number }>;
  code: { code_and_metadata_size: number; bytecode_and_metadata_size: number; external_script_source_size: number };
}

export interface Diagnostics {
  memlog: boolean;
  /** Directory for --heap-prof / --cpu-prof output, when wanted. */
  heapProfDir?: string;
  cpuProfDir?: string;
}

export class BundledAgent {
  child: ChildProcess | null = null;
  /** performance.now() when `run` was spawned. */
  startedAt = 0;
  private out = "";
  readonly stateDir: string;
  readonly memlogFile: string;

  constructor(
    readonly bundle: AgentBundle,
    readonly name: string,
    readonly nodeFlags: readonly string[],
    /** The single executable to run instead of `node <flags> bundle` (its flags are built in). */
    readonly executable?: string,
  ) {
    const safe = name.replace(/[^a-z0-9-]+/gi, "_");
    this.stateDir = path.join(bundle.dir, `state-${safe}`);
    this.memlogFile = path.join(bundle.dir, `memlog-${safe}.jsonl`);
  }

  private env(): Record<string, string> {
    return { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/root" };
  }

  async enroll(url: string, token: string): Promise<void> {
    try {
      const [cmd, ...pre] = this.executable ? [this.executable] : [process.execPath, this.bundle.file];
      await exec(cmd!, [...pre, "enroll", "--url", url, "--token", token, "--state-dir", this.stateDir], {
        cwd: this.bundle.dir,
        env: this.env(),
        timeout: 60_000,
      });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string; message: string };
      throw new Error(`enrolling agent ${this.name} failed: ${e.message}\n${e.stdout ?? ""}${e.stderr ?? ""}`);
    }
  }

  async start(diagnostics: Diagnostics): Promise<void> {
    const args = this.nodeFlags.filter((f) => !isEnv(f));
    const env = this.env();
    for (const f of this.nodeFlags.filter(isEnv)) env[f.slice(0, f.indexOf("="))] = f.slice(f.indexOf("=") + 1);
    if (diagnostics.memlog) {
      const preload = path.join(this.bundle.dir, "memlog-preload.cjs");
      await writeFile(preload, MEMLOG_PRELOAD);
      args.push("--require", preload);
      env.BENCH_AGENT_MEMLOG_FILE = this.memlogFile;
    }
    const prefix = this.name.replace(/[^a-z0-9-]+/gi, "_");
    if (diagnostics.heapProfDir) {
      await mkdir(diagnostics.heapProfDir, { recursive: true });
      args.push("--heap-prof", "--heap-prof-interval=16384", `--heap-prof-dir=${diagnostics.heapProfDir}`, `--heap-prof-name=${prefix}.heapprofile`);
    }
    if (diagnostics.cpuProfDir) {
      await mkdir(diagnostics.cpuProfDir, { recursive: true });
      args.push("--cpu-prof", `--cpu-prof-dir=${diagnostics.cpuProfDir}`, `--cpu-prof-name=${prefix}.cpuprofile`);
    }
    // The executable takes no Node flags on its command line; its diagnostics (preload,
    // profiles) go through NODE_OPTIONS, which a single executable honours. Its own built-in
    // flags are not repeated there.
    const diagnosticFlags = args.slice(this.nodeFlags.filter((f) => !isEnv(f)).length);
    const exeOptions = [process.env.BENCH_EXE_NODE_OPTIONS ?? "", ...diagnosticFlags].filter((o) => o !== "");
    if (this.executable && exeOptions.length > 0) env.NODE_OPTIONS = exeOptions.join(" ");
    const command = this.executable ? [this.executable] : [process.execPath, ...args, this.bundle.file];
    this.startedAt = performance.now();
    const child = spawn(command[0]!, [...command.slice(1), "run", "--state-dir", this.stateDir], {
      cwd: this.bundle.dir,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const keep = (chunk: Buffer) => {
      this.out = (this.out + chunk.toString()).slice(-OUTPUT_KEPT);
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
  }

  get pid(): number {
    const pid = this.child?.pid;
    if (pid === undefined) throw new Error(`agent ${this.name} is not running`);
    return pid;
  }

  exited(): boolean {
    return !this.child || this.child.exitCode !== null || this.child.signalCode !== null;
  }

  output(): string {
    return this.out;
  }

  async lastMemlog(): Promise<MemlogRecord | undefined> {
    try {
      const lines = (await readFile(this.memlogFile, "utf8")).trim().split("\n");
      return JSON.parse(lines[lines.length - 1]!) as MemlogRecord;
    } catch {
      return undefined;
    }
  }

  /** SIGTERM (the agent's graceful stop: at most about 5 s to flush), SIGKILL after 15 s. */
  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const child = this.child;
    if (!child) return { code: null, signal: null };
    if (this.exited()) return { code: child.exitCode, signal: child.signalCode };
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once("exit", (code, signal) => resolve({ code, signal })),
    );
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    try {
      return await exited;
    } finally {
      clearTimeout(timer);
    }
  }
}
