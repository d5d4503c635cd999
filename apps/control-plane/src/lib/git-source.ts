// The one rule for a Git repository URL and branch that Berth hands to an agent's git
// (projects, migrations, add-on repositories): https, or ssh as ssh://… or the scp-like
// git@host:path. Never file://, a local path, plain http, git://, ext:: or anything git
// would read as an option (a leading "-"), whatever the surface. Each surface answers its
// own stable error code (add-on repositories kept theirs), with the same messages.
import { DomainError, type ErrorCode } from "./errors.ts";

export type GitUrlKind = "https" | "ssh";

const MAX_URL = 2048;
const HOST = String.raw`([A-Za-z0-9](?:[A-Za-z0-9.-]*)|\[[0-9A-Fa-f:.]+\])`;
const HTTPS = new RegExp(String.raw`^https:\/\/(?:[^/?#\s@]+@)?${HOST}(:\d{1,5})?\/[^\s?#]+$`);
const SSH_URL = new RegExp(String.raw`^ssh:\/\/(?:[A-Za-z0-9._][A-Za-z0-9._-]*@)?${HOST}(:\d{1,5})?\/[^\s?#]+$`);
const SCP_LIKE = /^[A-Za-z0-9._][A-Za-z0-9._-]*@([A-Za-z0-9][A-Za-z0-9.-]*):(?!\/\/)(?!-)[^\s?#]+$/;
/** git check-ref-format for a branch (also a JSON Schema pattern, for routes that check in the schema): no "..", "//", "@{", leading "/" or "-", trailing "/" or "." or ".lock", no "/." and no space ~ ^ : ? * [ \. */
export const GIT_BRANCH_PATTERN = String.raw`^(?!-)(?!\/)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\/\.)(?!\.)(?!.*\/$)(?!.*\.$)(?!.*\.lock$)(?!.*\.lock\/)(?!@$)[^\s~^:?*[\\\u0000-\u001f\u007f]{1,255}$`;
const BRANCH = new RegExp(GIT_BRANCH_PATTERN, "u");

export const GIT_URL_RULE =
  "an https URL (https://host/owner/repo.git) or an ssh one (ssh://git@host[:port]/owner/repo.git or git@host:owner/repo.git); " +
  "never file://, a local path, http://, git:// or ext::";

export interface GitUrlCodes {
  url: ErrorCode;
  branch: ErrorCode;
}
/** The codes of projects and migrations; add-on repositories answer addon_url_invalid / addon_branch_invalid. */
export const GIT_CODES: GitUrlCodes = { url: "git_url_invalid", branch: "git_branch_invalid" };

/** The URL's kind, or null when it is none of those Berth clones. Userinfo is allowed only in https URLs (the caller decides whether to keep it). */
export function gitUrlKind(url: string): GitUrlKind | null {
  if (url.length > MAX_URL || [...url].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) return null;
  if (HTTPS.test(url)) return "https";
  if (SSH_URL.test(url) || SCP_LIKE.test(url)) return "ssh";
  return null;
}

/** Whether an https URL carries userinfo (user:token@). */
export function hasCredentials(url: string): boolean {
  return /^https?:\/\/[^/?#]*@/i.test(url);
}

/**
 * The URL's kind, or a 400 with `codes.url` saying what is accepted. `credentials`: "refuse"
 * (add-on repositories, which take a token apart) or "allow" (projects and migrations seal them).
 */
export function checkGitUrl(url: string, opts: { field: string; codes?: GitUrlCodes; credentials: "refuse" | "allow"; refuseHint?: string }): GitUrlKind {
  const code = (opts.codes ?? GIT_CODES).url;
  if (opts.credentials === "refuse" && hasCredentials(url)) {
    throw new DomainError(code, opts.refuseHint ?? "Put no credentials in the URL", [{ path: `body/${opts.field}`, message: "carries credentials" }]);
  }
  const kind = gitUrlKind(url);
  if (kind === null) throw new DomainError(code, `${opts.field} must be ${GIT_URL_RULE}`, [{ path: `body/${opts.field}`, message: "is not an https or ssh Git URL" }]);
  return kind;
}

/** A 400 with `codes.branch` unless `branch` is a Git branch name (check-ref-format) that git cannot read as an option. */
export function checkGitBranch(branch: string, opts: { field: string; codes?: GitUrlCodes }): void {
  const control = [...branch].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
  if (control || !BRANCH.test(branch)) {
    throw new DomainError((opts.codes ?? GIT_CODES).branch, `${JSON.stringify(branch)} is not a valid Git branch name (git check-ref-format; never starting with "-")`, [
      { path: `body/${opts.field}`, message: "is not a valid Git branch name" },
    ]);
  }
}
