// What the three Git hosts send with a push, reduced to what Berth needs, and how their
// requests are authenticated. Pure functions: no database, no HTTP.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export const GIT_HOSTS = ["github", "gitlab", "gitea"] as const;
export type GitHost = (typeof GIT_HOSTS)[number];

/** Header names per host: signature, event type, delivery id. */
export const HOOK_HEADERS: Record<GitHost, { signature: string; token?: string; event: string; delivery: string; pushEvent: string }> = {
  github: { signature: "x-hub-signature-256", event: "x-github-event", delivery: "x-github-delivery", pushEvent: "push" },
  // GitLab sends the configured secret itself as X-Gitlab-Token; an HMAC in X-Gitlab-Signature is accepted too.
  gitlab: { signature: "x-gitlab-signature", token: "x-gitlab-token", event: "x-gitlab-event", delivery: "x-gitlab-event-uuid", pushEvent: "push hook" },
  gitea: { signature: "x-gitea-signature", event: "x-gitea-event", delivery: "x-gitea-delivery", pushEvent: "push" },
};

/**
 * A comparable form of a repository URL: host and path, lower case, without scheme, user,
 * port or `.git`. https://github.com/Acme/ERP.git, git@github.com:acme/erp and
 * ssh://git@github.com:22/acme/erp.git all become github.com/acme/erp.
 */
export function normalizeRepoUrl(text: string): string | null {
  let s = text.trim();
  if (!s) return null;
  const scp = /^[^/@\s]+@([^:/\s]+):(?!\/)(.+)$/.exec(s); // git@host:owner/repo
  let host: string;
  let path: string;
  if (scp) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) s = `https://${s}`;
    let url: URL;
    try {
      url = new URL(s);
    } catch {
      return null;
    }
    host = url.hostname;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return null; // malformed percent-encoding names no repository
    }
    if (url.protocol === "file:") host = "file:"; // a repository on the agent's own disk (tests, air-gapped installs)
  }
  path = path.replace(/\/+$/, "").replace(/\.git$/i, "").replace(/^\/+/, "");
  if (!host || !path) return null;
  return `${host}/${path}`.toLowerCase();
}

export interface Push {
  /** Normalised URLs the payload names for its repository. */
  repoUrls: string[];
  /** owner/name (GitHub, Gitea full_name; GitLab path_with_namespace), lower case. */
  fullName: string | null;
  /** The pushed branch; null for tags and other refs. */
  branch: string | null;
  commit: string | null;
  message: string | null;
  /** The push deleted the branch: nothing to deploy. */
  deleted: boolean;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v && typeof v === "object" && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | null => (typeof v === "string" && v.length > 0 ? v : null);

export function parsePush(host: GitHost, body: unknown): Push {
  const b = obj(body);
  const repo = obj(host === "gitlab" ? b.project : b.repository);
  const urlFields =
    host === "gitlab" ? ["git_http_url", "git_ssh_url", "web_url", "http_url", "ssh_url", "url"] : ["clone_url", "ssh_url", "html_url", "git_url", "url"];
  const extra = host === "gitlab" ? [obj(b.repository).git_http_url, obj(b.repository).git_ssh_url, obj(b.repository).homepage] : [];
  const repoUrls = [...new Set([...urlFields.map((f) => repo[f]), ...extra].map(str).filter((u): u is string => !!u).map(normalizeRepoUrl).filter((u): u is string => !!u))];
  const fullName = str(host === "gitlab" ? repo.path_with_namespace : repo.full_name)?.toLowerCase() ?? null;
  const ref = str(b.ref);
  const branch = ref?.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : null;
  const commit = str(host === "gitlab" ? (b.checkout_sha ?? b.after) : b.after);
  const commits = Array.isArray(b.commits) ? b.commits.map(obj) : [];
  const head = obj(b.head_commit);
  const message =
    (str(head.id) === commit ? str(head.message) : null) ?? str(commits.find((c) => str(c.id) === commit)?.message) ?? str(commits[commits.length - 1]?.message) ?? null;
  const deleted = b.deleted === true || (commit !== null && /^0+$/.test(commit));
  return { repoUrls, fullName, branch, commit, message: message?.trim() ?? null, deleted };
}

/** Does a project's repository URL name the pushed repository? */
export function repoMatches(projectUrl: string | null, push: Push): boolean {
  const mine = projectUrl ? normalizeRepoUrl(projectUrl) : null;
  if (!mine) return false;
  if (push.repoUrls.includes(mine)) return true;
  // Some payloads carry only owner/name; the signature still decides.
  return push.repoUrls.length === 0 && !!push.fullName && mine.slice(mine.indexOf("/") + 1) === push.fullName;
}

const sameBytes = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/** Constant-time equality of two strings of any length (compares their SHA-256). */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

/** Does the request carry something to check (a signature, or GitLab's token)? */
export function hasCredential(host: GitHost, headers: Record<string, string | string[] | undefined>): boolean {
  const h = HOOK_HEADERS[host];
  return typeof headers[h.signature] === "string" || (!!h.token && typeof headers[h.token] === "string");
}

/**
 * Verifies a hook request with one project's secret, in constant time: HMAC-SHA256 of the
 * raw body as `sha256=<hex>` (GitHub) or `<hex>` / `sha256=<hex>` (Gitea, GitLab), or
 * GitLab's X-Gitlab-Token equal to the secret.
 */
export function verifyHook(host: GitHost, headers: Record<string, string | string[] | undefined>, rawBody: Buffer, secret: string): boolean {
  const h = HOOK_HEADERS[host];
  const sig = headers[h.signature];
  if (typeof sig === "string") {
    const m = /^(?:sha256=)?([0-9a-f]{64})$/i.exec(sig.trim());
    if (!m || (host === "github" && !sig.trim().startsWith("sha256="))) return false;
    const expected = createHmac("sha256", secret).update(rawBody).digest();
    return sameBytes(Buffer.from(m[1]!.toLowerCase(), "hex"), expected);
  }
  const token = h.token ? headers[h.token] : undefined;
  if (typeof token === "string") return constantTimeEqual(token, secret);
  return false;
}
