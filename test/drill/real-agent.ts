// A real agent process (apps/agent from source under node with tsx's loader, one process so a
// SIGKILL kills the agent) for the drill: enrolled through HAProxy, optionally run inside a
// network namespace (a command prefix) or under a skewed clock (extra environment: libfaketime).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, type WriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CLI = path.join(ROOT, "apps/agent/src/cli.ts");
const LOADER = ["--import", "tsx"];
const exec = promisify(execFile);

export interface JournalStatus {
  pendingCount: number;
  nextEventSeq: number;
  lastAckedSeq: number;
  droppedTotal: number;
}

export class DrillRealAgent {
  private child: ChildProcess | null = null;
  private readonly log: WriteStream;
  serverId = "";

  private constructor(
    readonly name: string,
    readonly stateDir: string,
    logDir: string,
  ) {
    this.log = createWriteStream(path.join(logDir, `agent-${name}.log`), { flags: "a" });
  }

  static async create(name: string, logDir: string): Promise<DrillRealAgent> {
    return new DrillRealAgent(name, await mkdtemp(path.join(os.tmpdir(), `berth-drill-agent-${name}-`)), logDir);
  }

  async enroll(url: string, token: string, serverId: string): Promise<void> {
    this.serverId = serverId;
    await exec(process.execPath, [...LOADER, CLI, "enroll", "--url", url, "--token", token, "--state-dir", this.stateDir, "--insecure"], { cwd: ROOT, timeout: 60_000 });
  }

  get running(): boolean {
    const c = this.child;
    return c !== null && c.exitCode === null && c.signalCode === null;
  }

  /** Starts `berth-agent run`, inside `prefix` (e.g. ip netns exec) and with extra environment. */
  start(opts: { prefix?: string[]; env?: Record<string, string> } = {}): void {
    const argv = [...(opts.prefix ?? []), process.execPath, ...LOADER, CLI, "run", "--state-dir", this.stateDir];
    this.log.write(`--- start ${new Date().toISOString()} ${JSON.stringify(opts.env ?? {})}\n`);
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: ROOT,
      env: {
        ...process.env,
        BERTH_LOG_LEVEL: "info",
        BERTH_INSECURE: "true",
        BERTH_PROXY_NAME: `berth-drill-proxy-${this.name}`,
        BERTH_PROXY_HTTP_PORT: "auto",
        BERTH_PROXY_HTTPS_PORT: "auto",
        BERTH_PROXY_BIND: "127.0.0.1",
        BERTH_PUBLIC_ADDRESSES: "127.0.0.1",
        ...opts.env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.pipe(this.log, { end: false });
    child.stderr!.pipe(this.log, { end: false });
    this.child = child;
  }

  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((r) => c.once("exit", () => r()));
    c.kill(signal);
    const timer = setTimeout(() => c.kill("SIGKILL"), 20_000);
    await exited;
    clearTimeout(timer);
  }

  /** The journal as `berth-agent status --json` reports it (read beside the running agent). */
  async status(): Promise<JournalStatus> {
    const { stdout } = await exec(process.execPath, [...LOADER, CLI, "status", "--json", "--state-dir", this.stateDir], { cwd: ROOT, timeout: 30_000 });
    return (JSON.parse(stdout) as { journal: JournalStatus }).journal;
  }

  async cleanup(): Promise<void> {
    await this.stop("SIGKILL").catch(() => {});
    await exec("docker", ["rm", "-f", `berth-drill-proxy-${this.name}`]).catch(() => {});
    await rm(this.stateDir, { recursive: true, force: true, maxRetries: 5 });
  }
}
