// Rules for what an add-on repository may hold, as pure functions: its Git URL and branch
// (lib/git-source.ts's rule; never credentials in the URL: a token is given apart), pinned
// commit, sub-paths, and which private access fits which URL.
import { ADDON_SUB_PATH_PATTERN } from "@berth/protocol";
import { DomainError } from "../../lib/errors.ts";
import { checkGitBranch, checkGitUrl as checkSourceUrl, type GitUrlKind } from "../../lib/git-source.ts";

export const MAX_ADDON_REPOSITORIES = 50;
export const MAX_SUB_PATHS = 20;
export const ADDON_NAME_PATTERN = "^[A-Za-z0-9._-]{1,100}$";
export const COMMIT_PATTERN = "^[0-9a-f]{7,64}$";
export const ACCESS_KINDS = ["public", "deploy_key", "token"] as const;
export type AccessKind = (typeof ACCESS_KINDS)[number];

const SUB_PATH = new RegExp(ADDON_SUB_PATH_PATTERN);
const CODES = { url: "addon_url_invalid", branch: "addon_branch_invalid" } as const;

export type UrlKind = GitUrlKind;

/** The URL's kind (the one rule of lib/git-source.ts), or a 400 addon_url_invalid saying what is accepted. */
export function checkGitUrl(url: string): UrlKind {
  return checkSourceUrl(url, {
    field: "git_url",
    codes: CODES,
    credentials: "refuse",
    refuseHint: 'Put no credentials in the URL: give a token (access "token") or use a deploy key with an ssh URL',
  });
}

export function checkBranch(branch: string): void {
  checkGitBranch(branch, { field: "branch", codes: CODES });
}

export function checkCommit(commit: string | null): void {
  if (commit !== null && !new RegExp(COMMIT_PATTERN).test(commit)) {
    throw new DomainError("addon_commit_invalid", "commit is a commit id: 7 to 64 lowercase hexadecimal characters");
  }
}

export function checkSubPaths(paths: string[]): string[] {
  if (paths.length > MAX_SUB_PATHS) throw new DomainError("addon_path_invalid", `At most ${MAX_SUB_PATHS} sub-paths`);
  const out: string[] = [];
  for (const raw of paths) {
    const path = raw.replace(/\/+$/, "");
    if (path.length > 255 || !SUB_PATH.test(path)) {
      throw new DomainError("addon_path_invalid", `"${raw}" is not a folder inside the repository (relative, no "." or ".." parts, letters, digits, . _ - @ +)`);
    }
    if (!out.includes(path)) out.push(path);
  }
  return out;
}

export function checkName(name: string): void {
  if (!new RegExp(ADDON_NAME_PATTERN).test(name)) {
    throw new DomainError("addon_name_invalid", "name is 1 to 100 letters, digits, '.', '_' or '-' (a repository that is one module is named after it)");
  }
}

/** The repository's name from its URL: the last path part without .git. */
export function nameFromUrl(url: string): string {
  const last = url.replace(/\/+$/, "").split(/[/:]/).pop() ?? "";
  const name = last.replace(/\.git$/, "").replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 100);
  return name === "" || /^\.+$/.test(name) ? "addons" : name;
}

/** Which access fits the URL: a deploy key needs ssh, a token https. */
export function checkAccess(access: AccessKind, kind: UrlKind, token: string | undefined): void {
  if (access === "deploy_key" && kind !== "ssh") throw new DomainError("addon_access_mismatch", "A deploy key works with an ssh URL (git@host:owner/repo.git); use a token for https");
  if (access === "token" && kind !== "https") throw new DomainError("addon_access_mismatch", "A token works with an https URL; use a deploy key for ssh");
  if (access !== "token" && token !== undefined) throw new DomainError("addon_access_mismatch", 'A token is given only with access "token"');
}

export function checkToken(token: string): void {
  if (token.length === 0 || token.length > 4096 || /[\r\n]/.test(token)) {
    throw new DomainError("addon_token_invalid", "token is 1 to 4096 characters on one line (user:token when the host wants a user name)");
  }
}
