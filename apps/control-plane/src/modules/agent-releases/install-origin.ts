// The control plane URL a server installs from: baked into the served install.sh (its
// default --url) and into the install command the dashboard shows. BERTH_PUBLIC_URL when it
// is set; otherwise the origin the request came in on, but only when its Host is a plain
// host name or address with an optional port (a Host header is whatever the client says:
// it must never reach a shell script), and https unless that host is this machine.

/** A DNS name, an IPv4 address or a bracketed IPv6 address, then an optional port. */
const HOST = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/;
/** What may stand in install.sh between single quotes and in a copied command line. */
const SAFE_URL = /^https?:\/\/(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

export class InstallOriginError extends Error {
  readonly code = "invalid_host";
  constructor(message: string) {
    super(message);
    this.name = "InstallOriginError";
  }
}

export function isPlainHost(host: string): boolean {
  return host.length <= 260 && HOST.test(host);
}

/** localhost, 127.0.0.0/8 or ::1 (with or without a port). */
export function isLoopbackHost(host: string): boolean {
  const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:[0-9]+$/, "");
  return /^(?:localhost|127(?:\.[0-9]{1,3}){3}|\[::1\])$/i.test(name);
}

/** A URL that can be pasted into install.sh and a shell command line as is. */
export function isShellSafeUrl(url: string): boolean {
  return SAFE_URL.test(url);
}

/**
 * The base URL for install.sh and the install command. Throws InstallOriginError
 * (`invalid_host`, 400) for a Host that is not a plain host[:port].
 */
export function installOrigin(request: { protocol: string; host: string }, publicUrl?: string): string {
  if (publicUrl !== undefined) {
    const base = publicUrl.replace(/\/+$/, "");
    if (!isShellSafeUrl(base)) throw new InstallOriginError(`BERTH_PUBLIC_URL ${JSON.stringify(publicUrl)} is not a plain http(s)://host[:port] origin`);
    return base;
  }
  const host = request.host;
  if (!isPlainHost(host)) {
    throw new InstallOriginError(
      `the Host header ${JSON.stringify(host.slice(0, 100))} is not a plain host name or address (with an optional port): set BERTH_PUBLIC_URL, or reach the control plane by its name`,
    );
  }
  // Plain http only to this machine: elsewhere install.sh refuses it (a network in between
  // could swap the executable), so the command it is given says https.
  const proto = isLoopbackHost(host) && request.protocol === "http" ? "http" : "https";
  return `${proto}://${host}`;
}

/** base64 of a raw 32-byte Ed25519 public key: safe on a command line as is. */
const KEY = /^[A-Za-z0-9+/]{43}=$/;

/**
 * The one line the dashboard shows next to a fresh enrolment token. `--key` is the control
 * plane's release-signing public key: install.sh refuses an executable whose signed manifest
 * does not verify against it, and the enrolment that does not pin it.
 */
export function installCommand(baseUrl: string, token: string, key?: string): string {
  const base = baseUrl.replace(/\/+$/, "");
  if (!isShellSafeUrl(base)) throw new InstallOriginError(`${JSON.stringify(base)} is not a plain http(s)://host[:port] origin`);
  if (key !== undefined && !KEY.test(key)) throw new Error("the release key is not a base64 Ed25519 public key");
  return `curl -fsSL ${base}/install.sh | sudo sh -s -- ${key === undefined ? "" : `--key ${key} `}--token ${token}`;
}
