// What a browser would get: the certificate the proxy serves for a name, read over a real
// TLS handshake, and why the CA refused one (Caddy's log), for the certificate's status.
import { connect, type PeerCertificate } from "node:tls";
import type { CertificateState } from "@berth/protocol";

export interface CertificateStatus {
  status: CertificateState;
  not_after: string | null;
  issuer: string | null;
  error: string | null;
}

/** The certificate served for `name` at host:port when it covers the name and has not expired; null otherwise. */
export function servedCertificate(
  host: string,
  port: number,
  name: string,
  timeoutMs = 3_000,
): Promise<{ notAfter: Date; issuer: string } | null> {
  return new Promise((resolve) => {
    // Not verified here: a certificate from a private ACME CA (tests, internal CAs) is still the proxy's answer.
    const socket = connect({ host, port, servername: name, rejectUnauthorized: false, timeout: timeoutMs });
    const done = (value: { notAfter: Date; issuer: string } | null) => {
      socket.destroy();
      resolve(value);
    };
    socket.once("secureConnect", () => {
      const cert = socket.getPeerCertificate();
      done(covers(cert, name) && new Date(cert.valid_to).getTime() > Date.now() ? { notAfter: new Date(cert.valid_to), issuer: issuerOf(cert) } : null);
    });
    socket.once("timeout", () => done(null));
    socket.once("error", () => done(null));
  });
}

function covers(cert: PeerCertificate, name: string): boolean {
  const names = (cert.subjectaltname ?? "")
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.startsWith("DNS:"))
    .map((entry) => entry.slice(4).toLowerCase());
  return names.includes(name);
}

function issuerOf(cert: PeerCertificate): string {
  const issuer = cert.issuer as unknown as Record<string, string | string[] | undefined> | undefined;
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
  return first(issuer?.O) ?? first(issuer?.CN) ?? "unknown";
}

/**
 * The latest ACME failure per name in Caddy's JSON log, dropped for names it obtained a
 * certificate for later. Lines that are not Caddy's JSON are skipped.
 */
export function acmeFailures(log: string): Map<string, string> {
  const failures = new Map<string, string>();
  for (const line of log.split("\n")) {
    if (!line.startsWith("{")) continue;
    let entry: { logger?: unknown; msg?: unknown; identifier?: unknown; error?: unknown };
    try {
      entry = JSON.parse(line) as typeof entry;
    } catch {
      continue;
    }
    if (entry.logger !== "tls.obtain" || typeof entry.identifier !== "string") continue;
    if (entry.msg === "could not get certificate from issuer" && typeof entry.error === "string") {
      failures.set(entry.identifier, entry.error);
    } else if (entry.msg === "certificate obtained successfully") {
      failures.delete(entry.identifier);
    }
  }
  return failures;
}
