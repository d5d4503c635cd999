// The add-on repositories of a deploy (platform, organisation and environment level): each
// is cloned at its commit with git-checkout.ts's mechanism into a staging folder beside the
// live one (<env>/repos), which replaces it only when every repository is there, so a failed
// clone leaves the running ERP's add-ons untouched. Private access:
// - ssh URL + deploy key: the key is written 0600 into a private temporary folder (removed
//   afterwards) and used alone (GIT_SSH_COMMAND with -i, IdentitiesOnly=yes, no ssh config,
//   no ssh-agent). Host keys are trusted on first use and then pinned per repository
//   (StrictHostKeyChecking=accept-new with a known_hosts file of that repository kept in the
//   environment's folder): a host key that changes later fails the clone.
// - https URL + token: sent as HTTP basic authorisation to the URL's own origin only, through
//   git's environment (GIT_CONFIG_*), never on a command line, in a URL or in a log.
// Submodules are checked out with the same credentials when asked.
import { randomBytes } from "node:crypto";
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddonRepository } from "@berth/protocol";
import { CommandError } from "../runner/handler-types.ts";
import { checkoutRepository, dropPreviousCheckout, redactUrl, replaceCheckout } from "./git-checkout.ts";

/** Where an environment's add-on repositories are mounted in the ERP container (read-only). */
export const ADDON_REPOS_MOUNT = "/mnt/berth-addons";

/** The live add-on repositories of an environment (mounted at ADDON_REPOS_MOUNT). */
export function addonReposDir(environmentDir: string): string {
  return join(environmentDir, "repos");
}

/** The known_hosts files of its ssh repositories, one per repository. */
export function knownHostsDir(environmentDir: string): string {
  return join(environmentDir, "ssh");
}

/** One repository as checked out. */
export interface AddonCheckout {
  id: string;
  level: AddonRepository["level"];
  name: string;
  branch: string;
  /** The full commit id checked out (what the deployment records). */
  commit: string;
  /** Relative to the repos folder: <level>-<first 8 of id>/<name>. */
  folder: string;
  paths: string[];
  hasRequirements: boolean;
}

export interface RepoLog {
  (level: "info" | "warning", message: string, data?: Record<string, unknown>): void;
}

/** The folder of a repository inside the repos folder; a repository that is one module is named after it. */
export function repositoryFolder(repo: Pick<AddonRepository, "id" | "level" | "name">): string {
  return join(`${repo.level}-${repo.id.slice(0, 8)}`, repo.name);
}

/** ssh://… or the scp-like user@host:path. */
export function isSshUrl(url: string): boolean {
  return /^ssh:\/\//i.test(url) || /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)/.test(url);
}

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** How a repository is named in logs and errors: its name and URL without credentials. */
function labelOf(repo: AddonRepository): string {
  return `add-on repository "${repo.name}" (${redactUrl(repo.url)})`;
}

/** git's environment for one repository, and a cleanup that removes the key file. */
async function credentialsFor(repo: AddonRepository, knownHostsDir: string): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  const env: Record<string, string> = {};
  let keyDir: string | null = null;
  if (isSshUrl(repo.url)) {
    await mkdir(knownHostsDir, { recursive: true, mode: 0o700 });
    const knownHosts = join(knownHostsDir, `known_hosts-${repo.id}`);
    const ssh = ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "StrictHostKeyChecking=accept-new"];
    ssh.push("-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null");
    if (repo.ssh_private_key !== undefined) {
      keyDir = await mkdtemp(join(tmpdir(), "berth-key-"));
      await chmod(keyDir, 0o700);
      const keyFile = join(keyDir, "id");
      await writeFile(keyFile, repo.ssh_private_key.endsWith("\n") ? repo.ssh_private_key : `${repo.ssh_private_key}\n`, { mode: 0o600 });
      ssh.push("-i", keyFile);
    } else ssh.push("-o", "IdentityFile=none");
    env.GIT_SSH_COMMAND = ssh.map(shellQuote).join(" ");
    // Nothing of the agent user's own ssh set-up may take part.
    env.SSH_AUTH_SOCK = "";
    env.GIT_SSH_VARIANT = "ssh";
  } else if (repo.token !== undefined) {
    const origin = /^(https?:\/\/[^/?#]+)/i.exec(repo.url)?.[1];
    if (origin === undefined) throw new CommandError("invalid_params", `${labelOf(repo)}: a token needs an https URL`);
    const userinfo = repo.token.includes(":") ? repo.token : `x-access-token:${repo.token}`;
    env.GIT_CONFIG_COUNT = "1";
    env.GIT_CONFIG_KEY_0 = `http.${origin}/.extraHeader`;
    env.GIT_CONFIG_VALUE_0 = `Authorization: Basic ${Buffer.from(userinfo).toString("base64")}`;
  }
  return {
    env,
    cleanup: async () => {
      if (keyDir !== null) await rm(keyDir, { recursive: true, force: true });
    },
  };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/**
 * A deploy's new set of add-on repositories, built in `<reposDir>.new-<random>`:
 * clone() each level in turn, then swapIn() (or discard() when the deploy fails first).
 */
export async function stageAddonRepositories(reposDir: string, knownHostsDir: string) {
  // Staging folders of deploys that died half-way are of no use to anyone.
  const parent = join(reposDir, "..");
  const base = reposDir.slice(parent.length + 1);
  for (const entry of await readdir(parent).catch(() => [] as string[])) {
    if (entry.startsWith(`${base}.new-`)) await rm(join(parent, entry), { recursive: true, force: true });
  }
  const staging = `${reposDir}.new-${randomBytes(4).toString("hex")}`;
  await mkdir(staging, { recursive: true, mode: 0o755 });
  const done: AddonCheckout[] = [];

  return {
    staging,
    checkouts: done,

    /** Clones these repositories into the staging folder; throws (naming the repository) on the first that fails. */
    async clone(repos: AddonRepository[], options: { signal: AbortSignal; timeoutMs: number; log: RepoLog }): Promise<AddonCheckout[]> {
      const out: AddonCheckout[] = [];
      for (const repo of repos) {
        const folder = repositoryFolder(repo);
        const label = labelOf(repo);
        options.log("info", `Cloning ${label}, branch ${repo.branch}${repo.commit ? `, commit ${repo.commit}` : ""}${repo.submodules ? ", with submodules" : ""}`);
        const target = join(staging, folder);
        await mkdir(join(target, ".."), { recursive: true, mode: 0o755 });
        const access = await credentialsFor(repo, knownHostsDir);
        try {
          const checkout = await checkoutRepository({ url: repo.url, branch: repo.branch, commit: repo.commit }, target, {
            signal: options.signal,
            timeoutMs: options.timeoutMs,
            env: access.env,
            submodules: repo.submodules,
            label,
          });
          await dropPreviousCheckout(target);
          for (const path of repo.paths) {
            if (!(await exists(join(target, path)))) {
              throw new CommandError("addon_path_not_found", `${label}: the folder "${path}" does not exist at commit ${checkout.commit}`);
            }
          }
          const result: AddonCheckout = {
            id: repo.id,
            level: repo.level,
            name: repo.name,
            branch: repo.branch,
            commit: checkout.commit,
            folder,
            paths: repo.paths,
            hasRequirements: checkout.hasRequirements,
          };
          options.log("info", `Checked out ${repo.name} at ${checkout.commit}`, { addon_repository: repo.id, commit: checkout.commit, branch: repo.branch });
          out.push(result);
          done.push(result);
        } finally {
          await access.cleanup();
        }
      }
      return out;
    },

    /** The staged set becomes the live one (the replaced one stays as the previous checkout until the deploy ends). */
    async swapIn(): Promise<void> {
      await chmod(staging, 0o755);
      await replaceCheckout(staging, reposDir);
    },

    async discard(): Promise<void> {
      await rm(staging, { recursive: true, force: true });
    },
  };
}
export type AddonStaging = Awaited<ReturnType<typeof stageAddonRepositories>>;
