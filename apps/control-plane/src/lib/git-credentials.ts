// Credentials written into a repository URL (https://user:token@host/…): the userinfo is
// split off to be sealed at rest and is never shown back; the deploy command gets it again.

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
