// A running agent process (`berth-agent run`, from source or the executable), its output kept
// for assertions and for the message of a timeout. agent-process.ts and
// executable-under-test.ts start their agents as this.
import type { ChildProcess } from "node:child_process";
import { waitUntil } from "./wait.ts";

export class RunningAgent {
  output = "";
  constructor(readonly child: ChildProcess) {
    child.stdout?.on("data", (c: Buffer) => (this.output += c.toString()));
    child.stderr?.on("data", (c: Buffer) => (this.output += c.toString()));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Polls `check`; a timeout names `what` and shows the agent's last output. */
  waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 30_000): Promise<void> {
    return waitUntil(what, check, { timeoutMs, intervalMs: 100, detail: () => `agent output:\n${this.output.slice(-3000)}` });
  }

  /** Ends the process (SIGTERM for a graceful stop, SIGKILL for a crash); its exit code. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<number | null> {
    const child = this.child;
    // Killed by a signal, exitCode stays null: signalCode says it has already exited.
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill(signal);
    return exited;
  }
}
