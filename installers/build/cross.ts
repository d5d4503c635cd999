// Building the agent for the other architecture on this machine: the target's C compiler and
// binutils (Debian's gcc-aarch64-linux-gnu / gcc-x86-64-linux-gnu) for the page-out addon, and
// qemu-user (Debian's qemu-user-static) to run the target's Node for the steps that must run
// it (its version, the SEA blob, the final self-check). Same architecture: nothing extra.
import { execFile, execFileSync } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);

export type Arch = "x64" | "arm64";

const TRIPLE: Record<Arch, string> = { x64: "x86_64-linux-gnu", arm64: "aarch64-linux-gnu" };
const QEMU: Record<Arch, string> = { x64: "qemu-x86_64-static", arm64: "qemu-aarch64-static" };
const HINT: Record<Arch, string> = { x64: "gcc-x86-64-linux-gnu qemu-user-static", arm64: "gcc-aarch64-linux-gnu qemu-user-static" };

export const isNative = (arch: Arch) => arch === process.arch;

function hasCommand(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Fails early, with the packages to install, when this machine cannot build for `arch`. */
export function assertCanBuild(arch: Arch): void {
  if (isNative(arch)) return;
  const missing = [`${TRIPLE[arch]}-gcc`, `${TRIPLE[arch]}-strip`, QEMU[arch]].filter((c) => !hasCommand(c));
  if (missing.length > 0) throw new Error(`building for ${arch} on ${process.arch} needs ${missing.join(", ")} (Debian: apt-get install ${HINT[arch]})`);
}

/** Runs a binary of `arch` (directly, or under qemu-user for the other architecture); resolves to its stdout. */
export async function runTarget(arch: Arch, file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<{ stdout: string }> {
  const run = { ...options, encoding: "utf8" as const, maxBuffer: 16 * 1024 * 1024 };
  // -L: the target's loader and libraries, from Debian's <triple> cross packages.
  const { stdout } = isNative(arch) ? await exec(file, args, run) : await exec(QEMU[arch], ["-L", `/usr/${TRIPLE[arch]}`, file, ...args], run);
  return { stdout };
}

/** The strip that understands the target's ELF files. */
export const stripFor = (arch: Arch) => (isNative(arch) ? "strip" : `${TRIPLE[arch]}-strip`);

/** The C compiler that builds an addon for `arch`. */
export const compilerFor = (arch: Arch) => (isNative(arch) ? "cc" : `${TRIPLE[arch]}-gcc`);
