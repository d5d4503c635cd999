// The berth CLI as a user runs it: its own process (node with tsx's loader, on the sources),
// a config directory of its own (XDG_CONFIG_HOME in a temp folder) and only the environment
// the test gives it, so no developer's login or BERTH_* variable leaks in.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const CLI_ENTRY = path.join(ROOT, "apps/control-plane/src/cli/bin.ts");

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliRunner {
  /** The XDG_CONFIG_HOME of this runner; the login file is <it>/berth/config.json. */
  configHome: string;
  /** Runs `berth <args>` to its end; `input` is written to its stdin. */
  run(args: string[], opts?: { env?: Record<string, string>; input?: string; timeoutMs?: number }): Promise<CliResult>;
  /** Starts `berth <args>` and gives the process, e.g. to read a --follow as it goes. */
  start(args: string[], opts?: { env?: Record<string, string> }): { child: ChildProcess; done: Promise<CliResult>; stdout(): string; stderr(): string };
}

export function cliRunner(baseEnv: Record<string, string> = {}): CliRunner {
  const configHome = mkdtempSync(path.join(tmpdir(), "berth-cli-config-"));
  const envFor = (extra: Record<string, string> = {}) => ({
    PATH: process.env.PATH ?? "",
    HOME: configHome,
    XDG_CONFIG_HOME: configHome,
    ...baseEnv,
    ...extra,
  });
  const start: CliRunner["start"] = (args, opts = {}) => {
    const child = spawn(process.execPath, ["--import", "tsx", CLI_ENTRY, ...args], { cwd: ROOT, env: envFor(opts.env), stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const done = new Promise<CliResult>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => resolve({ code, stdout, stderr }));
    });
    return { child, done, stdout: () => stdout, stderr: () => stderr };
  };
  return {
    configHome,
    start,
    async run(args, opts = {}) {
      const p = start(args, opts);
      p.child.stdin!.end(opts.input ?? "");
      const timer = setTimeout(() => p.child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
      try {
        return await p.done;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
