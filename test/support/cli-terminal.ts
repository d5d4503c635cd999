// The berth CLI on a terminal: run under util-linux's `script`, which gives it a pseudo-terminal
// (stdin, stdout and stderr are TTYs), for what only happens on one: prompts, hidden passwords,
// confirmations, colours. Each answer is typed once its prompt has appeared, as a person would.
import { spawn } from "node:child_process";
import path from "node:path";
import { CLI_ENTRY, type CliResult } from "./cli.ts";

const ROOT = path.resolve(path.dirname(CLI_ENTRY), "../../../..");
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Runs `berth <args>` on a pseudo-terminal; `answers` are [prompt to wait for, text to type]. */
export function runInTerminal(args: string[], env: Record<string, string>, answers: [prompt: string, typed: string][] = [], timeoutMs = 30_000): Promise<CliResult> {
  const command = [process.execPath, "--import", "tsx", CLI_ENTRY, ...args].map(quote).join(" ");
  const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: ROOT, env: { TERM: "xterm", ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let output = "";
  let stderr = "";
  const pending = [...answers];
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    output += chunk;
    const next = pending[0];
    if (next && output.includes(next[0])) {
      pending.shift();
      child.stdin.write(`${next[1]}\r`);
    }
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      // On a terminal, stdout and stderr are one stream: `stdout` holds both.
      resolve({ code, stdout: output, stderr });
    });
  });
}
