// The settings of environments' addresses: the base domain, the resolvers that verify domain
// claims, the servers' reverse proxy image and the certificate authority it uses.
import { setting } from "@berth/protocol";
import { hostnameProblem, MAX_BASE_DOMAIN_LENGTH } from "../modules/environments/domains.ts";
import { localPath } from "./setting-parsers.ts";

export const ROUTING_SETTINGS = {
  baseDomain: setting({
    name: "BERTH_BASE_DOMAIN",
    defaultText: "none (such environments have no URL)",
    description:
      "Environments without a domain of their own are served at `<name>-<8 hex of its id>.<base domain>` (point `*.<base domain>` at the servers); names under it are reserved",
    parse: (raw) => {
      const name = raw.toLowerCase();
      const problem = hostnameProblem(name) ?? (name.length > MAX_BASE_DOMAIN_LENGTH ? `is longer than ${MAX_BASE_DOMAIN_LENGTH} characters` : null);
      if (problem) throw new Error(`BERTH_BASE_DOMAIN ${problem}, got ${JSON.stringify(raw)}`);
      return name;
    },
  }),
  dnsServers: setting({
    name: "BERTH_DNS_SERVERS",
    defaultText: "the system's resolvers",
    description:
      "DNS servers (comma-separated `ip` or `ip:port`) through which domain claims are verified: TXT `_berth-challenge.<domain>`, A/AAAA, CNAME",
    parse: (raw) => raw.split(",").map((e) => e.trim()).filter((e) => e !== ""),
  }),
  proxyImage: setting({
    name: "BERTH_PROXY_IMAGE",
    default: "caddy:2",
    description:
      "The image of every server's reverse proxy, sent with each deploy: Caddy 2.8 or later (older ones can register two ACME accounts at once and then have every order refused)",
    parse: (raw) => {
      if (raw.length > 255) throw new Error("BERTH_PROXY_IMAGE must be at most 255 characters");
      return raw;
    },
  }),
  acmeCa: setting({
    name: "BERTH_ACME_CA",
    defaultText: "Let's Encrypt",
    description: "The ACME directory (`https://…`) the proxies get certificates from",
    parse: (raw) => {
      if (!raw.startsWith("https://") || raw.length > 2048) throw new Error(`BERTH_ACME_CA must be an https:// URL of an ACME directory (at most 2048 characters), got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  acmeCaRoot: setting({
    name: "BERTH_ACME_CA_ROOT",
    defaultText: "none",
    description: "A PEM file with the CA that signed a private ACME server's own TLS certificate; read at start, which fails if it cannot be read",
    parse: localPath,
  }),
  acmeEmail: setting({
    name: "BERTH_ACME_EMAIL",
    defaultText: "none",
    description: "Where the certificate authority sends expiry notices",
    parse: (raw) => {
      if (raw.length < 3 || raw.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(raw)) throw new Error(`BERTH_ACME_EMAIL must be an email address, got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
} as const;
