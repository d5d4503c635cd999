// What people see of a server's reverse proxy and of an environment's route in it, from
// what the agent last reported (proxy.state, stored by routing-events.ts): one certificate
// status per environment (the worst of its names), the DNS answer of its primary name, and
// the proxy itself. The schemas are the API's; both APIs show the same objects.
import { Type } from "typebox";
import { CERTIFICATE_STATES, DNS_STATES, type CertificateState, type RoutedDomain } from "@berth/protocol";
import { Nullable, StringEnum, Timestamp } from "../../lib/http-schemas.ts";

/** environments.routing as stored. */
export interface StoredRouting {
  mode: "serving" | "maintenance";
  domains: RoutedDomain[];
  /** When the agent reported it (the event's time). */
  checked_at: string;
}

/** servers.proxy as stored. */
export interface StoredProxy {
  running: boolean;
  image: string | null;
  public_addresses: string[];
  error: string | null;
  checked_at: string;
}

/** Worst first: one name in error makes the environment's certificate an error. */
const WORST_FIRST: readonly CertificateState[] = ["error", "not_requested", "pending", "valid"];

export const CertificateView = Type.Object(
  {
    status: StringEnum(["none", ...CERTIFICATE_STATES] as const, {
      description:
        "The worst over the environment's names (error > not_requested > pending > valid). none: no route in its server's proxy (never deployed, " +
        "or not reported yet); not_requested: a name does not resolve to the server, so no certificate was asked for (see dns); " +
        "pending: asked for, not issued yet; error: the certificate authority refused or failed (see error)",
    }),
    not_after: Nullable({ ...Timestamp, description: "The earliest expiry among the names whose certificate is served" }),
    error: Nullable(Type.String({ description: "The certificate authority's own error, for the first name that has one" })),
    checked_at: Nullable({ ...Timestamp, description: "When the server's agent last reported its proxy" }),
  },
  { description: "TLS certificates of the environment's names, as its server's proxy reports them" },
);

export const DnsView = Type.Object(
  {
    status: StringEnum(DNS_STATES, {
      description: "ok: the primary name resolves to the server's public addresses; mismatch: to other addresses; unresolved: not at all; unchecked: not checked (yet)",
    }),
    expected: Type.Array(Type.String(), { description: "The addresses the name must resolve to (the server's public addresses)" }),
    resolved: Type.Array(Type.String(), { description: "What it resolved to" }),
  },
  { description: "The DNS answer for the environment's primary host name (its domain, else its generated name)" },
);

export const ProxyView = Nullable(
  Type.Object(
    {
      running: Type.Boolean(),
      image: Nullable(Type.String({ description: "The proxy's image" })),
      public_addresses: Type.Array(Type.String(), { description: "The addresses the server's domains must point to" }),
      error: Nullable(Type.String({ description: "Why the proxy does not answer; null when it does" })),
      checked_at: Timestamp,
    },
    { description: "The server's reverse proxy as its agent last reported it; null before the first report" },
  ),
);

/** The earliest expiry among the names whose certificate is served. */
function earliest(values: (string | null)[]): string | null {
  const dates = values.filter((v): v is string => v !== null).sort((a, b) => Date.parse(a) - Date.parse(b));
  return dates[0] ?? null;
}

export function certificateView(routing: StoredRouting | null) {
  if (!routing || routing.domains.length === 0) return { status: "none" as const, not_after: null, error: null, checked_at: routing?.checked_at ?? null };
  const certs = routing.domains.map((d) => d.certificate);
  const status = WORST_FIRST.find((s) => certs.some((c) => c.status === s)) ?? "pending";
  return {
    status,
    not_after: earliest(certs.map((c) => (c.status === "valid" ? c.not_after : null))),
    error: certs.find((c) => c.error !== null)?.error ?? null,
    checked_at: routing.checked_at,
  };
}

/** The DNS answer of the primary name (the name itself when the route holds it, else unchecked). */
export function dnsView(routing: StoredRouting | null, primary: string | null) {
  const entry = routing?.domains.find((d) => d.name === primary);
  return entry ? { status: entry.dns.status, expected: entry.dns.expected, resolved: entry.dns.resolved } : { status: "unchecked" as const, expected: [], resolved: [] };
}

export function proxyView(proxy: StoredProxy | null) {
  if (!proxy) return null;
  return { running: proxy.running, image: proxy.image, public_addresses: proxy.public_addresses, error: proxy.error, checked_at: proxy.checked_at };
}
