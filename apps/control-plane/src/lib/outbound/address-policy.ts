// Which hosts and addresses the control plane may send a request to (no I/O). Only global
// unicast addresses are allowed. Refused: loopback, private (10/8, 172.16/12, 192.168/16,
// fc00::/7), link-local (169.254/16 with the cloud metadata address 169.254.169.254,
// fe80::/10), CGNAT 100.64/10, multicast, unspecified and broadcast, reserved and
// documentation ranges, and every IPv6 form that carries an IPv4 address (IPv4-mapped,
// NAT64, 6to4, Teredo) — the mapped ones are judged by the IPv4 address inside. Names that
// mean this machine or a cloud's metadata service are refused before any lookup.
//
// The operator's allow-list (BERTH_OUTBOUND_ALLOW: hosts, addresses and CIDRs) opens
// exceptions for self-hosted receivers: a host named on it may resolve to anything, and an
// address inside a listed range is allowed whatever name led to it.
import ipaddr from "ipaddr.js";

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Names that never leave the machine or that cloud providers answer with instance metadata. */
const REFUSED_NAMES = new Set([
  "localhost",
  "localhost.localdomain",
  "ip6-localhost",
  "ip6-loopback",
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "metadata.azure.internal",
  "instance-data",
  "instance-data.ec2.internal",
]);

/** A host as written in a URL or a setting, for comparison: lower case, no brackets, no final dot. */
export function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

/** The IP address a host is written as, or null for a name. */
export function ipLiteral(host: string): string | null {
  const h = normalizeHost(host);
  return ipaddr.isValid(h) && (ipaddr.IPv6.isValid(h) || ipaddr.IPv4.isValidFourPartDecimal(h)) ? h : null;
}

/**
 * Why an address may not be connected to (ipaddr.js's range name: "loopback", "private",
 * "linkLocal", ...), or null for a global unicast address. Unparseable text is refused.
 */
export function refusedRange(address: string): string | null {
  let ip: Address;
  try {
    // process() turns an IPv4-mapped IPv6 address (::ffff:127.0.0.1) into its IPv4 address.
    ip = ipaddr.process(normalizeHost(address));
  } catch {
    return "invalid";
  }
  const range = ip.range();
  return range === "unicast" ? null : range;
}

/** Whether a name is refused before any lookup (localhost and its subdomains, metadata names). */
export function isRefusedName(host: string): boolean {
  const h = normalizeHost(host);
  return REFUSED_NAMES.has(h) || h.endsWith(".localhost");
}

/** The operator's exceptions: host names, and address ranges (a single address is a /32 or /128). */
export interface AllowList {
  hosts: ReadonlySet<string>;
  ranges: readonly [Address, number][];
}

export const EMPTY_ALLOW_LIST: AllowList = { hosts: new Set(), ranges: [] };

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * Parses allow-list entries (one each, or one comma-separated text): `10.0.0.0/8`,
 * `127.0.0.1`, `::1`, `fd00::/8`, `hooks.internal`. Throws on an entry that is none of these.
 */
export function parseAllowList(entries: string | readonly string[]): AllowList {
  const list = (typeof entries === "string" ? entries.split(",") : entries).map((e) => e.trim()).filter((e) => e !== "");
  const hosts = new Set<string>();
  const ranges: [Address, number][] = [];
  for (const entry of list) {
    const e = normalizeHost(entry);
    if (e.includes("/")) {
      if (!ipaddr.isValidCIDR(e)) throw new Error(`not a CIDR range: ${JSON.stringify(entry)}`);
      const [ip, bits] = ipaddr.parseCIDR(e);
      ranges.push(ip.kind() === "ipv6" && (ip as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96 ? [(ip as ipaddr.IPv6).toIPv4Address(), bits - 96] : [ip, bits]);
    } else if (ipLiteral(e) !== null) {
      const ip = ipaddr.process(e);
      ranges.push([ip, ip.kind() === "ipv4" ? 32 : 128]);
    } else if (HOST_NAME.test(e)) {
      hosts.add(e);
    } else {
      throw new Error(`not a host name, address or CIDR range: ${JSON.stringify(entry)}`);
    }
  }
  return { hosts, ranges };
}

/** Whether a host name (as written in the URL) is on the list. */
export function allowsHost(list: AllowList, host: string): boolean {
  return list.hosts.has(normalizeHost(host));
}

/** Whether an address falls in a listed range. */
export function allowsAddress(list: AllowList, address: string): boolean {
  let ip: Address;
  try {
    ip = ipaddr.process(normalizeHost(address));
  } catch {
    return false;
  }
  return list.ranges.some(([net, bits]) => net.kind() === ip.kind() && ip.match(net, bits));
}

/**
 * Why the host of a URL is refused without resolving it — a refused name or a refused
 * address literal not on the allow-list — or null. A name passing this is still checked
 * after resolution, at connect time.
 */
export function literalRefusal(list: AllowList, host: string): string | null {
  if (allowsHost(list, host)) return null;
  const ip = ipLiteral(host);
  if (ip === null) return isRefusedName(host) ? "refusedName" : null;
  return allowsAddress(list, ip) ? null : refusedRange(ip);
}

/**
 * Whether a resolved address may be connected to for a host: the host is on the list, the
 * address is in a listed range, or it is a global unicast address.
 */
export function mayConnect(list: AllowList, host: string, address: string): boolean {
  return allowsHost(list, host) || allowsAddress(list, address) || refusedRange(address) === null;
}
