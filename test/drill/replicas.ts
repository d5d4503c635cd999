// The control-plane replicas: real `npm start` processes (apps/control-plane/src/server.ts under
// node with tsx's loader, one process each so a SIGKILL really kills the replica), each on
// its own port, sharing the database and the master key, trusting HAProxy's X-Forwarded-For.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream } from "node:fs";
import path from "node:path";
import { freePort } from "../setup/global-setup.ts";
import { TEST_PROXY } from "../support/real-agent.ts";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SERVER = path.join(ROOT, "apps/control-plane/src/server.ts");

export interface Replica {
  readonly index: number;
  readonly port: number;
  child: ChildProcess | null;
  /** Starts (or restarts) the process and waits until /readyz answers 200. */
  start(): Promise<void>;
  /** SIGKILL (a crash) or SIGTERM (a graceful stop); resolves when the process has exited. */
  stop(signal: NodeJS.Signals): Promise<void>;
  readonly running: boolean;
}

export interface ReplicaOptions {
  databaseUrl: string;
  masterKey: Buffer;
  dataDir: string;
  logDir: string;
  drain: { settleMs: number; handoverMs: number };
}

async function ready(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`replica on port ${port} exited (${child.exitCode ?? child.signalCode}) before it was ready`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`replica on port ${port} not ready within ${timeoutMs / 1000} s`);
}

export async function makeReplica(index: number, opts: ReplicaOptions): Promise<Replica> {
  const port = await freePort();
  const log = createWriteStream(path.join(opts.logDir, `replica-${index}.log`), { flags: "a" });
  const replica: Replica = {
    index,
    port,
    child: null,
    get running() {
      const c = this.child;
      return c !== null && c.exitCode === null && c.signalCode === null;
    },
    async start() {
      log.write(`--- start ${new Date().toISOString()}\n`);
      const child = spawn(process.execPath, ["--import", "tsx", SERVER], {
        cwd: ROOT,
        env: {
          ...process.env,
          BERTH_PORT: String(port),
          BERTH_HOST: "127.0.0.1",
          DATABASE_URL: opts.databaseUrl,
          BERTH_MASTER_KEY: opts.masterKey.toString("base64"),
          BERTH_DATA_DIR: path.join(opts.dataDir, `replica-${index}`),
          BERTH_BACKUP_DIR: path.join(opts.dataDir, "backups"),
          BERTH_TRUST_PROXY: "127.0.0.1",
          BERTH_LOG_LEVEL: process.env.DRILL_REPLICA_LOG_LEVEL ?? "warn",
          // Every agent reaches the replicas through one proxy address.
          BERTH_AGENT_HANDSHAKES_PER_ADDRESS: "10000",
          BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE: "100000",
          // The real agents' deploys run the images test/images/build.sh made (no registry here).
          BERTH_PROXY_IMAGE: TEST_PROXY.image,
          BERTH_DRAIN_SETTLE_MS: String(opts.drain.settleMs),
          BERTH_DRAIN_HANDOVER_MS: String(opts.drain.handoverMs),
          NODE_ENV: "production",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stdout!.pipe(log, { end: false });
      child.stderr!.pipe(log, { end: false });
      this.child = child;
      await ready(port, child, 120_000);
    },
    async stop(signal) {
      const c = this.child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise<void>((r) => c.once("exit", () => r()));
      c.kill(signal);
      // A graceful stop that hangs is itself a finding; the drill ends it after 60 s.
      const timer = setTimeout(() => c.kill("SIGKILL"), 60_000);
      await exited;
      clearTimeout(timer);
    },
  };
  return replica;
}
