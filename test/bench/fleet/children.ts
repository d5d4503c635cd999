// Starting the benchmark's child processes and talking to them: one request, one reply, by id.
import { fork, spawn, type ChildProcess } from "node:child_process";
import type { ReplyEnvelope, RequestEnvelope } from "./ipc.ts";

export interface StartOptions {
  env: NodeJS.ProcessEnv;
  /** Open files the child needs; when above our soft limit, a shell raises it first. */
  needFiles: number;
  softLimit: number;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
}

/**
 * Forks `script` with this process's loader flags (tsx), --expose-gc and an IPC channel. The
 * child is the node process itself (no wrapper left behind), so its pid is what /proc shows.
 */
export function startChild(script: string, opts: StartOptions): ChildProcess {
  const execArgv = [...process.execArgv, "--expose-gc", ...(opts.nodeArgs ?? [])];
  const stdio: ["ignore", "inherit", "inherit", "ipc"] = ["ignore", "inherit", "inherit", "ipc"];
  if (opts.needFiles <= opts.softLimit) return fork(script, [], { execArgv, env: opts.env, stdio });
  // `exec` keeps the pid: the shell becomes node once the limit is raised (or as high as the hard limit allows).
  const raise = `ulimit -n ${opts.needFiles} 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$0" "$@"`;
  return spawn("/bin/sh", ["-c", raise, process.execPath, ...execArgv, script], { env: opts.env, stdio });
}

type Waiter = { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout };

export class Child<Req extends { type: string }, Replies extends { [K in Req["type"]]: unknown }, Ev> {
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();
  exited = false;

  constructor(
    readonly name: string,
    readonly proc: ChildProcess,
    onEvent: (event: Ev) => void,
  ) {
    proc.on("message", (message: ReplyEnvelope | Ev) => {
      if (typeof message === "object" && message !== null && "id" in message && "ok" in message) {
        const w = this.waiting.get(message.id);
        if (!w) return;
        this.waiting.delete(message.id);
        clearTimeout(w.timer);
        if (message.ok) w.resolve(message.result);
        else w.reject(new Error(`${name}: ${message.error}`));
      } else {
        onEvent(message as Ev);
      }
    });
    proc.on("exit", (code, signal) => {
      this.exited = true;
      for (const w of this.waiting.values()) {
        clearTimeout(w.timer);
        w.reject(new Error(`${name} exited (${signal ?? code}) before answering`));
      }
      this.waiting.clear();
    });
  }

  request<T extends Req["type"]>(request: Extract<Req, { type: T }>, timeoutMs = 120_000): Promise<Replies[T]> {
    if (this.exited) return Promise.reject(new Error(`${this.name} has exited`));
    const id = this.nextId++;
    return new Promise<Replies[T]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`${this.name}: no answer to ${request.type} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      this.proc.send({ id, request } satisfies RequestEnvelope<Req>);
    });
  }

  /** Resolves when the process has exited; kills it after `graceMs`. */
  async stop(graceMs: number): Promise<void> {
    if (this.exited || this.proc.exitCode !== null) return;
    const exited = new Promise<void>((r) => this.proc.once("exit", () => r()));
    const timer = setTimeout(() => this.proc.kill("SIGKILL"), graceMs);
    await exited;
    clearTimeout(timer);
  }
}

/** Waits for a child's first event (its "ready"), or fails if it exits first. */
export function firstEvent<Ev>(proc: ChildProcess, name: string, timeoutMs: number): Promise<Ev> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${timeoutMs} ms`)), timeoutMs);
    proc.once("message", (m: Ev) => {
      clearTimeout(timer);
      resolve(m);
    });
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited during start (${signal ?? code})`));
    });
  });
}
