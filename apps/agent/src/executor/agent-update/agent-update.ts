// agent.update: installs a newer agent executable (see PROTOCOL.md, Self-update). The command
// is signed with a pinned key, so its sha256 and size authenticate the download: the bytes
// are checked before anything is replaced, the new executable must report the signed
// version, and the swap is one rename with the previous executable kept for rollback.
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, createWriteStream, rmSync } from "node:fs";
import { rename } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { promisify } from "node:util";
import { isLoopbackHost } from "../../config/control-plane-url.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { UPDATE_MARKER } from "../../state/update-marker.ts";
import { AGENT_VERSION } from "../../version.ts";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";

const exec = promisify(execFile);

/** Exit code of a `run` that stopped to let its supervisor start the updated executable. */
export const EXIT_UPDATED = 75;

export interface SelfUpdateDeps {
  /** The running executable, replaced in place. */
  executable: string;
  stateDir: string;
  /** Allow http:// to another machine (tests only), as for the link. */
  insecure: boolean;
  fetch: typeof fetch;
  /** Called once the new executable is in place: finish, report, exit EXIT_UPDATED. */
  requestRestart(): void;
}

/** -1, 0, 1 comparing x.y.z (pre-release suffixes compare as text after the numbers). */
export function compareVersions(a: string, b: string): number {
  const split = (v: string) => {
    const [core = "", rest = ""] = v.split(/(?=[-+])/, 2);
    return { nums: core.split(".").map((n) => Number(n)), rest };
  };
  const x = split(a);
  const y = split(b);
  for (let i = 0; i < 3; i++) {
    const d = (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (x.rest === y.rest) return 0;
  // 1.2.3-rc1 < 1.2.3
  if (x.rest === "") return 1;
  if (y.rest === "") return -1;
  return x.rest < y.rest ? -1 : 1;
}

function checkUrl(raw: string, insecure: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CommandError("invalid_params", `update URL "${raw}" is not a URL`);
  }
  if (url.protocol === "https:") return url;
  if (url.protocol === "http:" && (insecure || isLoopbackHost(url.hostname))) return url;
  throw new CommandError("invalid_params", `refusing to download the update over ${url.protocol}// from ${url.hostname}`);
}

/**
 * `<file> --version`. ETXTBSY is retried: a child another part of this process forks at the
 * moment the download is written can hold a copy of its descriptor until that child execs.
 */
async function runVersion(file: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await exec(file, ["--version"], { timeout: 30_000, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" } })).stdout;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ETXTBSY" || attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

export function createAgentUpdateHandler(deps: SelfUpdateDeps): CommandHandler<"agent.update"> {
  return async (params, ctx) => {
    if (params.version === AGENT_VERSION) return { updated: false, version: AGENT_VERSION };
    if (compareVersions(params.version, AGENT_VERSION) < 0) {
      throw new CommandError("update_downgrade_refused", `refusing to replace agent ${AGENT_VERSION} with the older ${params.version}`);
    }
    const url = checkUrl(params.url, deps.insecure);
    const dir = dirname(deps.executable);
    const temp = join(dir, `.${basename(deps.executable)}.${randomBytes(6).toString("hex")}.download`);
    ctx.emit.log("info", `Downloading agent ${params.version} (${params.size} bytes)`);
    try {
      const response = await deps.fetch(url, { signal: ctx.signal });
      if (!response.ok || response.body === null) {
        throw new CommandError("update_download_failed", `GET ${url.href} answered ${response.status}`);
      }
      const hash = createHash("sha256");
      let size = 0;
      const out = createWriteStream(temp, { mode: 0o700 });
      // "close", not "finish": the file must be closed before it can be executed (ETXTBSY).
      const finished = new Promise<void>((resolve, reject) => {
        out.on("close", resolve);
        out.on("error", reject);
      });
      try {
        for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength;
          if (size > params.size) throw new CommandError("update_checksum_mismatch", `the download is larger than the signed ${params.size} bytes`);
          hash.update(chunk);
          if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
        }
      } finally {
        out.end();
        await finished;
      }
      const digest = hash.digest("hex");
      if (size !== params.size || digest !== params.sha256) {
        throw new CommandError(
          "update_checksum_mismatch",
          `the download (${size} bytes, sha256 ${digest}) is not the signed executable (${params.size} bytes, sha256 ${params.sha256}); nothing was replaced`,
        );
      }
      chmodSync(temp, 0o755);
      let reported: string;
      try {
        reported = (await runVersion(temp)).trim();
      } catch (error) {
        throw new CommandError("update_broken", `the new executable does not run: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (reported !== params.version) {
        throw new CommandError("update_broken", `the new executable reports version ${reported}, not the signed ${params.version}`);
      }
      ctx.signal.throwIfAborted();
      // The rollback copy first, then the marker the next start counts, then the one rename
      // that makes the new executable current.
      copyFileSync(deps.executable, `${deps.executable}.previous`);
      writeFileAtomic(join(deps.stateDir, UPDATE_MARKER), `from=${AGENT_VERSION}\nto=${params.version}\nattempts=0\n`, 0o600);
      await rename(temp, deps.executable);
    } catch (error) {
      rmSync(temp, { force: true });
      throw error;
    }
    ctx.emit.log("info", `Agent ${params.version} installed; restarting into it`);
    deps.requestRestart();
    return { updated: true, from: AGENT_VERSION, to: params.version };
  };
}
