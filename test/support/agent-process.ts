// The real agent, run as its own process from source (tsx), with its own state directory.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { RunningAgent } from "./running-agent.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const CLI = path.join(ROOT, "apps/agent/src/cli.ts");
// One process (node with tsx's loader), so SIGKILL really kills the agent: the tsx
// command would run it in a child of its own.
const NODE = process.execPath;
const LOADER = ["--import", "tsx"];
const exec = promisify(execFile);

export class AgentProcess {
  private running: RunningAgent | null = null;
  private constructor(readonly stateDir: string) {}

  /** The running (or last) agent's process, null before start(). */
  get child(): ChildProcess | null {
    return this.running?.child ?? null;
  }

  /** What the running (or last) agent printed. */
  get output(): string {
    return this.running?.output ?? "";
  }

  static async create(): Promise<AgentProcess> {
    return new AgentProcess(await mkdtemp(path.join(os.tmpdir(), "berth-agent-e2e-")));
  }

  async enroll(url: string, token: string): Promise<void> {
    await exec(NODE, [...LOADER, CLI, "enroll", "--url", url, "--token", token, "--state-dir", this.stateDir], { cwd: ROOT, timeout: 60_000 });
  }

  /**
   * The agent's reverse proxy in tests: named after this agent (several agents share one
   * Docker engine here), on ports Docker chooses on 127.0.0.1 (never the host's 80 and 443),
   * with 127.0.0.1 as the server's public address. `env` adds or replaces settings.
   */
  get proxyName(): string {
    return `berth-proxy-${path.basename(this.stateDir).replace(/[^a-zA-Z0-9_.-]/g, "")}`;
  }

  start(env: Record<string, string> = {}): void {
    const child = spawn(NODE, [...LOADER, CLI, "run", "--state-dir", this.stateDir], {
      cwd: ROOT,
      env: {
        ...process.env,
        BERTH_LOG_LEVEL: "info",
        BERTH_PROXY_NAME: this.proxyName,
        BERTH_PROXY_HTTP_PORT: "auto",
        BERTH_PROXY_HTTPS_PORT: "auto",
        BERTH_PROXY_BIND: "127.0.0.1",
        BERTH_PUBLIC_ADDRESSES: "127.0.0.1",
        // The mail catcher: on the engine's one berth-mail network, on a port the system chooses.
        BERTH_MAIL_PORT: "auto",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.running = new RunningAgent(child);
  }

  /** Ends the process: SIGTERM for a graceful stop, SIGKILL for a crash. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
    return this.running ? this.running.stop(signal) : null;
  }

  async status(): Promise<{ journal: { pendingCount: number; nextEventSeq: number; lastAckedSeq: number } }> {
    const { stdout } = await exec(NODE, [...LOADER, CLI, "status", "--json", "--state-dir", this.stateDir], { cwd: ROOT, timeout: 30_000 });
    return JSON.parse(stdout);
  }

  /**
   * Kills the agent, then removes the containers that bind-mount its state directory (an
   * ERP container left running keeps writing its filestore there, and removing the
   * directory under it fails with ENOTEMPTY), then the directory.
   */
  async cleanup(): Promise<void> {
    await this.stop("SIGKILL").catch(() => {});
    await this.removeContainersUsingStateDir().catch(() => {});
    await this.removeProxyObjects().catch(() => {});
    await rm(this.stateDir, { recursive: true, force: true, maxRetries: 5 });
  }

  /** The proxy's container went with the state dir's mounts; its network and volume are named after it. */
  private async removeProxyObjects(): Promise<void> {
    const docker = new Docker();
    await docker.getContainer(this.proxyName).remove({ force: true }).catch(() => {});
    await docker.getNetwork(this.proxyName).remove().catch(() => {});
    await docker.getVolume(`${this.proxyName}-data`).remove().catch(() => {});
  }

  private async removeContainersUsingStateDir(): Promise<void> {
    const docker = new Docker();
    const containers = await docker.listContainers({ all: true, filters: { label: ["berth.managed=true"] } });
    const inside = (source: string) => source === this.stateDir || source.startsWith(this.stateDir + path.sep);
    const mine = containers.filter((c) => c.Mounts.some((m) => m.Type === "bind" && inside(m.Source)));
    await Promise.all(mine.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {})));
  }
}
