// The rules of an environment's host names (no I/O): what a domain or alias may be, the name
// an environment gets under the installation's base domain when it has no domain, and the
// URL it is served at. The proxy routes and certifies exactly these names.
import { HOSTNAME_PATTERN, MAX_DOMAIN_ALIASES } from "@berth/protocol";
import { DomainError } from "../../lib/errors.ts";

const HOSTNAME = new RegExp(HOSTNAME_PATTERN);
/** A generated name's first label: `<name slug>-<8 hex of the id>`, at most 63 characters. */
const SLUG_MAX = 63 - 1 - 8;
/** The base domain leaves room for a full first label (63 + the dot) within 253. */
export const MAX_BASE_DOMAIN_LENGTH = 253 - 64;

/** Why `name` (already lowercase) cannot be a routed host name, or null when it can. */
export function hostnameProblem(name: string): string | null {
  if (name.endsWith(".")) return "must not end with a dot";
  if (name.includes("*")) return "must not be a wildcard";
  if (!HOSTNAME.test(name)) return "must be a host name of two labels or more (letters, digits and hyphens, e.g. erp.example.com)";
  // HOSTNAME_PATTERN lets 192.0.2.1 through; no top-level domain is all digits.
  if (/^[0-9]+$/.test(name.slice(name.lastIndexOf(".") + 1))) return "must be a host name, not an IP address";
  return null;
}

/** The host name as stored and routed: lowercase; refused (invalid_domain) when it is not one. */
export function normalizeHostname(raw: string, field = "domain"): string {
  const name = raw.toLowerCase();
  const problem = hostnameProblem(name);
  if (problem) throw new DomainError("invalid_domain", `${field} ${JSON.stringify(raw)} ${problem}`, [{ path: `body/${field}`, message: problem }]);
  return name;
}

/**
 * The name an environment without a domain is served at: `<name slug>-<first 8 hex of its
 * id>.<base domain>`. Built only from what never changes in an environment's life (its name
 * and id; a project can be renamed), so the URL and its certificate stay put; the id part
 * keeps two environments of the same name apart.
 */
export function generatedHostname(env: { id: string; name: string }, baseDomain: string): string {
  const slug =
    env.name
      .normalize("NFKD")
      .replace(/\p{M}+/gu, "") // é -> e
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .slice(0, SLUG_MAX)
      .replace(/^-+|-+$/g, "") || "env";
  return `${slug}-${env.id.replace(/-/g, "").slice(0, 8).toLowerCase()}.${baseDomain}`;
}

/** Where an installation serves environments: its base domain for generated names (none: only environments with a domain get a URL). */
export interface EnvironmentAddresses {
  baseDomain: string | null;
  /** The primary host name: the domain, else the generated name, else null. */
  hostname(env: { id: string; name: string; domain: string | null }): string | null;
  url(env: { id: string; name: string; domain: string | null }): string | null;
}

export function environmentAddresses(baseDomain: string | null): EnvironmentAddresses {
  const hostname = (env: { id: string; name: string; domain: string | null }) =>
    env.domain ? env.domain.toLowerCase() : baseDomain ? generatedHostname(env, baseDomain) : null;
  return {
    baseDomain,
    hostname,
    url(env) {
      const name = hostname(env);
      return name ? `https://${name}` : null;
    },
  };
}

export interface DomainsInput {
  /** undefined: unchanged; null: removed. */
  domain?: string | null | undefined;
  aliases?: string[] | undefined;
}

/**
 * The environment's names after a change, normalised and checked: valid host names
 * (invalid_domain), at most MAX_DOMAIN_ALIASES aliases, no repeats, no alias equal to the
 * domain (validation_error), and nothing under the base domain except the environment's own
 * generated name (domain_reserved), so no one can take another environment's generated name.
 */
export function checkDomains(
  current: { id: string; name: string; domain: string | null; aliases: string[] },
  input: DomainsInput,
  baseDomain: string | null,
): { domain: string | null; aliases: string[] } {
  const domain = input.domain === undefined ? current.domain : input.domain === null ? null : normalizeHostname(input.domain);
  const aliases = input.aliases === undefined ? current.aliases : input.aliases.map((a, i) => normalizeHostname(a, `aliases/${i}`));
  if (aliases.length > MAX_DOMAIN_ALIASES) {
    throw new DomainError("validation_error", `At most ${MAX_DOMAIN_ALIASES} aliases`, [{ path: "body/aliases", message: `must have at most ${MAX_DOMAIN_ALIASES} items` }]);
  }
  const seen = new Set<string>();
  aliases.forEach((a, i) => {
    if (a === domain) throw new DomainError("validation_error", `Alias ${a} is the domain itself`, [{ path: `body/aliases/${i}`, message: "equals the domain" }]);
    if (seen.has(a)) throw new DomainError("validation_error", `Alias ${a} is listed twice`, [{ path: `body/aliases/${i}`, message: "is a duplicate" }]);
    seen.add(a);
  });
  if (baseDomain) {
    const own = generatedHostname(current, baseDomain);
    for (const name of domain ? [domain, ...aliases] : aliases) {
      if (name !== own && (name === baseDomain || name.endsWith(`.${baseDomain}`))) {
        throw new DomainError("domain_reserved", `${name} is under ${baseDomain}, where Berth names environments itself; use a domain of your own`);
      }
    }
  }
  return { domain, aliases };
}
