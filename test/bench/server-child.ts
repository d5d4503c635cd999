// A control plane (or the bare baseline) in a child process of its own, so a bench measures
// its CPU apart from the load generator's: started on a database, answering commands over
// IPC (profile, stats), stopped with a close and, after 15 s, a kill.
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Command, Reply, Variant } from "./server-process.ts";

export interface ServerProcess {
  variant: Variant;
  url: string;
  pid: number;
  /** Sends a command and waits for the child's answer; throws unless it is that command's `done`. */
  call(cmd: Exclude<Command, { type: "close" }>): Promise<Extract<Reply, { type: "done" }>>;
  stop(): Promise<void>;
}

export async function startServerProcess(variant: Variant, opts: { databaseUrl: string; masterKey: Buffer; poolMax: number }): Promise<ServerProcess> {
  const child: ChildProcess = fork(fileURLToPath(new URL("./server-process.ts", import.meta.url)), [variant], {
    // The parent runs under tsx; its loader flags let the child load TypeScript too.
    execArgv: process.execArgv,
    env: { ...process.env, BENCH_DATABASE_URL: opts.databaseUrl, BENCH_POOL_MAX: String(opts.poolMax), BENCH_MASTER_KEY: opts.masterKey.toString("base64") },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const next = () =>
    new Promise<Reply>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`the ${variant} server exited (code ${code})`));
      child.once("exit", onExit);
      child.once("message", (msg) => {
        child.off("exit", onExit);
        resolve(msg as Reply);
      });
    });
  const ready = await next();
  if (ready.type !== "ready") throw new Error(`the ${variant} server sent ${JSON.stringify(ready)} instead of its port`);
  return {
    variant,
    url: `http://127.0.0.1:${ready.port}`,
    pid: child.pid!,
    async call(cmd) {
      const reply = next();
      child.send(cmd);
      const r = await reply;
      if (r.type !== "done" || r.of !== cmd.type) throw new Error(`the ${variant} server answered ${JSON.stringify(r)} to ${cmd.type}`);
      return r;
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ type: "close" } satisfies Command);
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
