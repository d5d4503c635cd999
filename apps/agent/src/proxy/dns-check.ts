// Whether a host name points at this server: what verifying_dns and the proxy's periodic
// check ask before a certificate is requested, so that a wrong record does not spend the
// CA's rate limits on validations that must fail.
import { Resolver } from "node:dns/promises";
import type { DnsState } from "@berth/protocol";

export interface DnsAnswer {
  status: DnsState;
  resolved: string[];
  expected: string[];
}

export interface DnsChecker {
  check(name: string): Promise<DnsAnswer>;
}

/** Answers that mean "no such record", as opposed to a resolver that failed. */
const NO_RECORD = new Set(["ENODATA", "ENOTFOUND", "NXDOMAIN"]);

/**
 * `servers`: resolvers as "address" or "address:port" (null: the system's). `expected`: the
 * server's public addresses; none known means the answer cannot be judged (`unchecked`).
 */
export function createDnsChecker(options: { servers: string[] | null; expected: () => string[]; timeoutMs?: number }): DnsChecker {
  const resolver = new Resolver({ timeout: options.timeoutMs ?? 3_000, tries: 2 });
  if (options.servers !== null) resolver.setServers(options.servers);

  async function lookup(name: string, family: 4 | 6): Promise<string[]> {
    try {
      return family === 4 ? await resolver.resolve4(name) : await resolver.resolve6(name);
    } catch (error) {
      if (NO_RECORD.has(String((error as NodeJS.ErrnoException).code))) return [];
      throw error;
    }
  }

  return {
    async check(name) {
      const expected = options.expected();
      let resolved: string[];
      try {
        const [v4, v6] = await Promise.all([lookup(name, 4), lookup(name, 6)]);
        resolved = [...v4, ...v6].sort();
      } catch {
        return { status: "unresolved", resolved: [], expected };
      }
      return { status: judge(resolved, expected), resolved, expected };
    },
  };
}

/** ok only when every address the name has is this server's: a certificate validation may try any of them. */
export function judge(resolved: readonly string[], expected: readonly string[]): DnsState {
  if (resolved.length === 0) return "unresolved";
  if (expected.length === 0) return "unchecked";
  const mine = new Set(expected.map(normalise));
  return resolved.every((address) => mine.has(normalise(address))) ? "ok" : "mismatch";
}

function normalise(address: string): string {
  return address.toLowerCase();
}

/** Whether the proxy should ask a CA for this name: it resolves here, or nobody can tell. */
export function mayCertify(answer: Pick<DnsAnswer, "status">): boolean {
  return answer.status === "ok" || answer.status === "unchecked";
}

/** The records to create, for a step's warning and the dashboard. */
export function recordsToCreate(name: string, expected: readonly string[]): string {
  if (expected.length === 0) return `${name} → this server's public address`;
  return expected.map((address) => `${name} ${address.includes(":") ? "AAAA" : "A"} ${address}`).join("; ");
}
