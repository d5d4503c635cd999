// The addresses this server's domains must point to. An administrator's list wins (a server
// behind NAT or a load balancer cannot see its own public address); otherwise the globally
// routable addresses of the host's interfaces.
import { BlockList, isIP } from "node:net";
import { networkInterfaces } from "node:os";

const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
] as const) {
  PRIVATE.addSubnet(net, prefix, "ipv6");
}

export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

/** The configured list, or the host's public interface addresses (possibly none). */
export function publicAddresses(configured: readonly string[] | null): string[] {
  if (configured !== null) return [...configured];
  const found = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const info of list ?? []) {
      if (!info.internal && isPublicAddress(info.address)) found.add(info.address);
    }
  }
  return [...found].sort();
}
