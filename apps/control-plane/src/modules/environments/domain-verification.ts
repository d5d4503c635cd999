// Proves pending domain claims (domain-claims.repo.ts) from DNS, through a resolver the operator
// can point elsewhere (BERTH_DNS_SERVERS; default the system's). A claim is proven when
//   - TXT _berth-challenge.<name> holds the claim's token (shown to the claimant), or
//   - the name's A/AAAA records are all among its server's public addresses (what the
//     server's agent reports of its proxy), or
//   - the name is a CNAME to the environment's generated name.
// Run when a name is claimed, on demand (POST …/domains/{domain}/verify) and by a job.
import { Resolver } from "node:dns/promises";
import type { Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { markChecked, pendingClaims, proofTargetOf, proveClaim, type DomainClaimRow } from "./domain-claims.repo.ts";
import { generatedHostname } from "./domains.ts";
import type { EnvironmentRow } from "./environments.repo.ts";

export const CHALLENGE_LABEL = "_berth-challenge";
/** The job that checks pending claims again (jobs/background.ts): every five minutes. */
export const DOMAIN_VERIFICATION_QUEUE = "environments.domain-verification";
export const DOMAIN_VERIFICATION_CRON = "*/5 * * * *";
export const challengeName = (name: string) => `${CHALLENGE_LABEL}.${name}`;

export interface DnsLookups {
  txt(name: string): Promise<string[]>;
  addresses(name: string): Promise<string[]>;
  cname(name: string): Promise<string[]>;
}

/** Lookups through `servers` (ip or ip:port), else the system's resolvers; a name that does not resolve answers nothing. */
export function dnsLookups(servers: string[] = []): DnsLookups {
  const resolver = new Resolver({ timeout: 2000, tries: 2 });
  if (servers.length > 0) resolver.setServers(servers);
  const none = () => [] as string[];
  return {
    txt: (name) => resolver.resolveTxt(name).then((records) => records.map((parts) => parts.join("")), none),
    async addresses(name) {
      const [v4, v6] = await Promise.all([resolver.resolve4(name).catch(none), resolver.resolve6(name).catch(none)]);
      return [...v4, ...v6];
    },
    cname: (name) => resolver.resolveCname(name).then((names) => names.map((n) => n.toLowerCase().replace(/\.$/, "")), none),
  };
}

/** What a name may point at to prove an environment's claim: its server's public addresses (A/AAAA), its generated name (CNAME; null without a base domain). */
export interface ProofTarget {
  publicAddresses: string[];
  generatedName: string | null;
}

/** Why the claim is proven, or null. */
export async function proof(
  dns: DnsLookups,
  claim: Pick<DomainClaimRow, "name" | "token">,
  target: ProofTarget,
): Promise<"txt" | "address" | "cname" | null> {
  const [txt, addresses, cname] = await Promise.all([dns.txt(challengeName(claim.name)), dns.addresses(claim.name), dns.cname(claim.name)]);
  if (txt.includes(claim.token)) return "txt";
  if (target.generatedName !== null && cname.includes(target.generatedName)) return "cname";
  if (addresses.length > 0 && addresses.every((a) => target.publicAddresses.includes(a))) return "address";
  return null;
}

export function createDomainVerification(deps: {
  db: Database;
  clock: Clock;
  dns: DnsLookups;
  baseDomain: string | null;
  /** Tells an environment's server its names changed (a released name left it). */
  onNamesChanged?: (row: EnvironmentRow) => Promise<void>;
}) {
  /** The environment's generated name and its server's public addresses. */
  async function targetOf(environmentId: string): Promise<ProofTarget | null> {
    const env = await proofTargetOf(deps.db, environmentId);
    if (!env) return null;
    return { publicAddresses: Array.isArray(env.addresses) ? env.addresses : [], generatedName: deps.baseDomain ? generatedHostname(env, deps.baseDomain) : null };
  }

  /** Checks these pending claims; true for each proven one. */
  async function check(claims: DomainClaimRow[]): Promise<number> {
    let proven = 0;
    for (const claim of claims) {
      if (claim.status !== "pending") continue;
      const target = await targetOf(claim.environmentId);
      if (!target) continue;
      const at = deps.clock.now();
      if ((await proof(deps.dns, claim, target)) === null) {
        await markChecked(deps.db, claim, at);
        continue;
      }
      const lost = await proveClaim(deps.db, claim, at);
      if (lost === null) continue;
      proven++;
      for (const row of lost) await deps.onNamesChanged?.(row);
    }
    return proven;
  }

  return {
    check,
    /** What the environment's names may point at instead of the TXT record (shown with each claim); null: no such environment. */
    targetOf,
    /** The verification job's pass: up to `limit` pending claims, the longest unchecked first. */
    async pass(limit = 200): Promise<number> {
      return check(await pendingClaims(deps.db, limit));
    },
  };
}
export type DomainVerification = ReturnType<typeof createDomainVerification>;
