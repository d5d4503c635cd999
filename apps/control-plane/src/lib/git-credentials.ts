// Credentials written into a repository URL (https://user:token@host/…): the userinfo is
// split off to be sealed at rest and is never shown back; the deploy command gets it again.
import { seal } from "./master-key.ts";

// http(s)://[userinfo@]authority…: the userinfo ends at the authority's last '@'. An ssh
// URL's user (ssh://git@host/…) names the account, it is no secret: it stays in the URL.
const WITH_USERINFO = /^(https?:\/\/)([^/?#]*)@([^/?#]*)(.*)$/is;

/** The URL without its userinfo, and the userinfo as written (still percent-encoded), or null. */
export function splitCredentials(url: string): { url: string; credentials: string | null } {
  const m = WITH_USERINFO.exec(url);
  if (!m) return { url, credentials: null };
  return { url: `${m[1]}${m[3]}${m[4]}`, credentials: m[2] === "" ? null : m[2]! };
}

/** The URL with the userinfo put back in. */
export function joinCredentials(url: string, credentials: string | null): string {
  if (!credentials) return url;
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)(.*)$/s.exec(url);
  return m ? `${m[1]}${credentials}@${m[2]}` : url;
}

/** The URL as it may be shown: without userinfo. */
export function withoutCredentials(url: string): string {
  return splitCredentials(url).url;
}

/** Rows whose repository URL still holds its userinfo in clear (written before it was sealed). */
export interface ClearCredentialRows {
  withClearCredentials(after: string, limit: number): Promise<{ id: string; gitRepoUrl: string }[]>;
  /**
   * Replaces a clear URL by its bare form and sealed userinfo unless the URL changed meanwhile
   * (true when this call did); `sealed` undefined (an empty userinfo) leaves the sealed column.
   */
  moveCredentials(id: string, clearUrl: string, url: string, sealed: string | undefined): Promise<boolean>;
}

/**
 * Seals the userinfo of URLs stored in clear, as a create stores it: the bare URL and the
 * sealed userinfo. In id order, each row once: a row whose URL changed meanwhile (an edit, or
 * another replica sealing it first) is left and not read again, so replicas starting at once
 * seal a row once and the walk ends whatever the rows hold. Returns how many this run sealed.
 */
export async function sealClearCredentials(rows: ClearCredentialRows, masterKey: Buffer): Promise<number> {
  let sealed = 0;
  for (let after = "00000000-0000-0000-0000-000000000000"; ; ) {
    const batch = await rows.withClearCredentials(after, 100);
    if (batch.length === 0) return sealed;
    for (const r of batch) {
      const { url, credentials } = splitCredentials(r.gitRepoUrl);
      if (await rows.moveCredentials(r.id, r.gitRepoUrl, url, credentials === null ? undefined : seal(masterKey, credentials))) sealed++;
    }
    after = batch[batch.length - 1]!.id;
  }
}
