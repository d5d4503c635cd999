// The agent executable for the tests that need it, built once and reused: the build is
// skipped when its inputs did not change (installers/build), and a lock keeps two test
// files (vitest runs two at a time) from building into the same place at once.
import { mkdirSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { buildAgentExecutable, REPO_ROOT, type BuiltExecutable } from "../../installers/build/build-agent.ts";

const CACHE = path.join(REPO_ROOT, "installers/.cache");
const LOCK = path.join(CACHE, "test-build.lock");
const STALE_LOCK_MS = 10 * 60_000;

/** Runs `work` while holding the build lock (the CLI's executable shares it: cli-executable.ts). */
export async function withLock<T>(work: () => Promise<T>): Promise<T> {
  mkdirSync(CACHE, { recursive: true });
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      // A lock a killed run left behind.
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) rmSync(LOCK, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
      await sleep(250);
    }
  }
  try {
    return await work();
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

const log = (line: string) => process.stderr.write(`[agent executable] ${line}\n`);

/** installers/dist/berth-agent-linux-x64, as `npm run build:agent` makes it. */
export function agentExecutable(): Promise<BuiltExecutable> {
  return withLock(() => buildAgentExecutable({ log }));
}

/** The same executable reporting another version, for upgrade and self-update tests. */
export function agentExecutableVersion(version: string): Promise<BuiltExecutable> {
  return withLock(() => buildAgentExecutable({ log, versionOverride: version, outDir: path.join(CACHE, `dist-${version}`) }));
}

/** The executable for the other architecture (cross-compiled, run under qemu-user), in a directory of its own. */
export function agentExecutableForArch(arch: "x64" | "arm64"): Promise<BuiltExecutable> {
  return withLock(() => buildAgentExecutable({ log, arch, outDir: path.join(CACHE, `dist-${arch}`) }));
}
