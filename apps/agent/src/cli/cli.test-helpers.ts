// Running the CLI in tests: in-process through main(), or as a real process through tsx.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import type { Env } from "../config/config-error.ts";
import type { CliIo } from "./cli-io.ts";
import { main } from "./main.ts";

export const AGENT_DIR = fileURLToPath(new URL("../..", import.meta.url));
const CLI = fileURLToPath(new URL("../cli.ts", import.meta.url));

export async function runCli(argv: string[], env: Env = {}): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (l) => void out.push(l), err: (l) => void err.push(l), env, fetch: globalThis.fetch, WebSocket };
  const code = await main(argv, io);
  return { code, out, err };
}

/** The real entry point in its own process, as systemd would start it. */
export function spawnCli(argv: string[], env: Record<string, string> = {}): ChildProcess & { output: () => string } {
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...argv], {
    cwd: AGENT_DIR,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return Object.assign(child, { output: () => output });
}

export function exitOf(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
}
