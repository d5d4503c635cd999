// Checks out the customer's repository at an exact commit: a full clone of the branch (a
// shallow one could not check out an older commit, which is how rollbacks break elsewhere),
// built beside the live checkout and swapped in only when complete, so a failed clone
// leaves the running deployment's code untouched. git runs with an argument vector, never
// a shell, and never prompts.
//
// Whatever the control plane sends (defence in depth behind its own rule, lib/git-source.ts
// there): git speaks https and ssh only, for the clone and every submodule (protocol.allow
// never but those two, GIT_ALLOW_PROTOCOL, so no file://, local path, git://, ext:: or
// plain http), and a URL or branch that git could read as an option is refused first.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { GitSource } from "@berth/protocol";
import { CommandError } from "../runner/handler-types.ts";

const execFileAsync = promisify(execFile);

export interface CheckoutOptions {
  signal: AbortSignal;
  /** Deadline of each git invocation. */
  timeoutMs: number;
  /** Added to git's environment (credentials of add-on repositories: GIT_SSH_COMMAND, GIT_CONFIG_*). */
  env?: Record<string, string>;
  /** Check out the submodules too (recursively, at the commits the checked-out commit records). */
  submodules?: boolean;
  /** How errors name the repository (default: its URL without credentials). */
  label?: string;
}

export interface Checkout {
  /** The full commit id now checked out. */
  commit: string;
  hasRequirements: boolean;
}

/** Replaces `target` with a checkout of `source`; on failure `target` is as it was. */
export async function checkoutRepository(source: GitSource, target: string, options: CheckoutOptions): Promise<Checkout> {
  const suffix = randomBytes(4).toString("hex");
  const fresh = `${target}.new-${suffix}`;
  const url = options.label ?? redactUrl(source.url);
  checkSource(source, url);
  try {
    await git(["clone", "--quiet", "--no-recurse-submodules", `--branch=${source.branch}`, "--", source.url, fresh], options).catch(
      (error: unknown) => {
        throw new CommandError("git_clone_failed", `git clone of ${url} (branch ${source.branch}) failed: ${gitReason(error)}`);
      },
    );
    if (source.commit !== null) {
      await git(["-C", fresh, "checkout", "--quiet", "--detach", source.commit], options).catch((error: unknown) => {
        throw new CommandError(
          "git_commit_not_found",
          `commit ${source.commit} could not be checked out from ${url} (branch ${source.branch}): ${gitReason(error)}`,
        );
      });
    }
    if (options.submodules === true) {
      await git(["-C", fresh, "submodule", "update", "--init", "--recursive", "--quiet"], options).catch((error: unknown) => {
        throw new CommandError("git_submodules_failed", `the submodules of ${url} (branch ${source.branch}) could not be checked out: ${gitReason(error)}`);
      });
    }
    const commit = (await git(["-C", fresh, "rev-parse", "HEAD"], options)).trim();
    // The ERP runs as another user: whatever the agent's umask, it must be able to read the code.
    await makeReadable(fresh);
    const hasRequirements = await exists(join(fresh, "requirements.txt"));
    await swapIn(fresh, target, suffix);
    return { commit, hasRequirements };
  } finally {
    await rm(fresh, { recursive: true, force: true });
  }
}

/** Replaces `target` with an empty directory: a deployment without a repository. */
export async function emptyCheckout(target: string, create: (dir: string) => Promise<void>): Promise<void> {
  const suffix = randomBytes(4).toString("hex");
  const fresh = `${target}.new-${suffix}`;
  await create(fresh);
  await swapIn(fresh, target, suffix);
}

/** Puts the complete folder `fresh` at `target`, keeping the replaced one as its previous checkout. */
export async function replaceCheckout(fresh: string, target: string): Promise<void> {
  await swapIn(fresh, target, randomBytes(4).toString("hex"));
}

/**
 * The checkout the running ERP was started with stays as `<target>.previous` (one of them)
 * until the deploy succeeds (dropPreviousCheckout), so a rollback can put it back
 * (restorePreviousCheckout). A running container keeps its mount of the renamed folder.
 */
async function swapIn(fresh: string, target: string, suffix: string): Promise<void> {
  const previous = previousCheckout(target);
  const hadTarget = await exists(target);
  if (hadTarget) {
    const stale = `${previous}.old-${suffix}`;
    if (await exists(previous)) await rename(previous, stale);
    await rename(target, previous);
    await rm(stale, { recursive: true, force: true });
  }
  await rename(fresh, target);
}

export function previousCheckout(target: string): string {
  return `${target}.previous`;
}

/** After a successful deploy: the previous checkout is not needed any more. */
export async function dropPreviousCheckout(target: string): Promise<void> {
  await rm(previousCheckout(target), { recursive: true, force: true });
}

/** Rollback: the previous checkout is live again; false when there is none. */
export async function restorePreviousCheckout(target: string): Promise<boolean> {
  const previous = previousCheckout(target);
  if (!(await exists(previous))) return false;
  const failed = `${target}.failed-${randomBytes(4).toString("hex")}`;
  if (await exists(target)) await rename(target, failed);
  await rename(previous, target);
  await rm(failed, { recursive: true, force: true });
  return true;
}

/** The transports git may use: nothing but https and ssh, for clones and submodules alike. */
const PROTOCOLS = ["protocol.allow=never", "protocol.https.allow=always", "protocol.ssh.allow=always", "protocol.file.allow=never", "protocol.ext.allow=never"];

/** https://…, ssh://… or scp-like user@host:path, not starting with "-" anywhere git or ssh would read it. */
const ALLOWED_URL = /^(?:https:\/\/[^\s-][^\s]*|ssh:\/\/(?:[^\s@/-][^\s@/]*@)?[A-Za-z0-9[][^\s]*|[A-Za-z0-9._][A-Za-z0-9._-]*@[A-Za-z0-9][A-Za-z0-9.-]*:(?!-)[^\s]+)$/;

/** Refuses (invalid_params) what no deploy should hand git: another transport, or an option as URL or branch. */
export function checkSource(source: Pick<GitSource, "url" | "branch">, label = redactUrl(source.url)): void {
  if (!ALLOWED_URL.test(source.url)) {
    throw new CommandError("invalid_params", `${label}: only https and ssh repositories are cloned (not file://, a local path, http://, git:// or ext::)`);
  }
  if (source.branch.startsWith("-") || [...source.branch].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f)) {
    throw new CommandError("invalid_params", `${label}: ${JSON.stringify(source.branch)} is not a branch name`);
  }
}

async function git(args: string[], options: CheckoutOptions): Promise<string> {
  const { stdout } = await execFileAsync("git", [...PROTOCOLS.flatMap((p) => ["-c", p]), ...args], {
    signal: options.signal,
    timeout: options.timeoutMs,
    maxBuffer: 4 * 1024 * 1024,
    env: {
      ...process.env,
      GIT_TERMINAL_PROMPT: "0",
      GCM_INTERACTIVE: "never",
      LC_ALL: "C",
      ...options.env,
      // Last, so nothing above can widen it: git itself refuses any other transport (submodules included).
      GIT_ALLOW_PROTOCOL: "https:ssh",
      GIT_PROTOCOL_FROM_USER: "0",
    },
  });
  return stdout;
}

const SSH_REASONS = [/Host key verification failed/, /Permission denied \(/, /Could not resolve hostname/, /Connection (refused|timed out|closed)/, /No route to host/];

function gitReason(error: unknown): string {
  const e = error as { stderr?: unknown; killed?: boolean; signal?: unknown; name?: string; message?: string };
  if (e.name === "AbortError") return "stopped (cancelled or past the step's deadline)";
  if (e.killed === true) return `git did not finish in time (${String(e.signal)})`;
  const stderr = typeof e.stderr === "string" ? e.stderr.trim() : "";
  const lines = stderr.split("\n").filter((line) => line.trim() !== "");
  // ssh's own line says why a private repository was not reached (git's fatal line after it
  // is generic); else the first fatal line says what went wrong, the lines after it are advice.
  const ssh = SSH_REASONS.map((re) => lines.find((line) => re.test(line))).find((line) => line !== undefined);
  const reason = ssh ?? lines.find((line) => /^(fatal|error):/.test(line)) ?? lines.at(-1) ?? e.message ?? String(error);
  return redactUrl(reason);
}

/** Hides credentials a URL may carry (https://user:token@host/...). */
export function redactUrl(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, "$1***@");
}

async function makeReadable(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) await makeReadable(path);
    else if (entry.isFile()) await chmod(path, ((await stat(path)).mode & 0o777) | 0o444);
  }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
