// Environment parsed once at start; a bad value stops the process with a clear message.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Value } from "@sinclair/typebox/value";
import { ProxySettings } from "@berth/protocol";
import { parseAllowList } from "./lib/outbound/address-policy.ts";
import type { ObjectStoreSettings } from "./lib/object-store/index.ts";
import { hostnameProblem, MAX_BASE_DOMAIN_LENGTH } from "./modules/environments/domains.ts";

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPgPort: number;
  logLevel: string;
}

/**
 * A setting under its BERTH_* name, or under the name it had before (PORT, HOST, LOG_LEVEL),
 * which still works but is reported once on stderr.
 */
function renamed(name: string, oldName: string): string | undefined {
  const value = process.env[name];
  if (value !== undefined && value !== "") return value;
  const old = process.env[oldName];
  if (old === undefined || old === "") return undefined;
  if (!warned.has(oldName)) {
    warned.add(oldName);
    process.emitWarning(`${oldName} is deprecated: set ${name} instead`, { code: "BERTH_SETTING_RENAMED" });
  }
  return old;
}
const warned = new Set<string>();

function port(name: string, fallback: number, oldName?: string): number {
  const raw = oldName ? renamed(name, oldName) : process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
  return n;
}

export function loadConfig(): Config {
  return {
    port: port("BERTH_PORT", 3000, "PORT"),
    host: renamed("BERTH_HOST", "HOST") || "127.0.0.1",
    databaseUrl: process.env.DATABASE_URL || undefined,
    // npm runs workspace scripts in the workspace folder; INIT_CWD is where the user typed the command.
    dataDir: path.resolve(process.env.INIT_CWD ?? process.cwd(), process.env.BERTH_DATA_DIR || ".data"),
    embeddedPgPort: port("BERTH_EMBEDDED_PG_PORT", 54329),
    logLevel: renamed("BERTH_LOG_LEVEL", "LOG_LEVEL") || "info",
  };
}

/** Where the agent executables and installers are served from (npm run build:agent's output). */
export function agentDistDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.BERTH_AGENT_DIST_DIR || fileURLToPath(new URL("../../../installers/dist", import.meta.url));
}

/** The URL servers reach this control plane on (install.sh's default --url); else each request's origin. */
export function publicUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const raw = env.BERTH_PUBLIC_URL;
  if (raw === undefined || raw === "") return undefined;
  if (!/^https?:\/\/[^/]+\/?$/.test(raw)) throw new Error(`BERTH_PUBLIC_URL must be an origin like https://berth.example.com, got ${JSON.stringify(raw)}`);
  return raw.replace(/\/$/, "");
}

/**
 * BERTH_OUTBOUND_ALLOW: the hosts, addresses and CIDR ranges outgoing requests (webhooks) may
 * reach although they are private or loopback, comma-separated (e.g. 127.0.0.1,10.0.0.0/8,hooks.internal).
 */
export function outboundAllowList(env: NodeJS.ProcessEnv = process.env): string[] {
  const entries = (env.BERTH_OUTBOUND_ALLOW ?? "").split(",").map((e) => e.trim()).filter((e) => e !== "");
  try {
    parseAllowList(entries);
  } catch (err) {
    throw new Error(`BERTH_OUTBOUND_ALLOW must list hosts, addresses or CIDR ranges separated by commas: ${(err as Error).message}`);
  }
  return entries;
}

/**
 * BERTH_TRUST_PROXY: which proxies' X-Forwarded-For (and -Proto, -Host) to believe, as
 * Fastify's trustProxy takes it: `true` (any), a hop count (`1`), or addresses and CIDR ranges
 * separated by commas (`127.0.0.1,10.0.0.0/8`). Unset: none, the socket address is the caller's.
 */
export function trustProxySetting(env: NodeJS.ProcessEnv = process.env): boolean | number | string[] | undefined {
  const raw = (env.BERTH_TRUST_PROXY ?? "").trim();
  if (raw === "" || raw === "false") return undefined;
  if (raw === "true") return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw.split(",").map((e) => e.trim()).filter((e) => e !== "");
  for (const e of entries) {
    const [addr, bits, ...rest] = e.split("/");
    const family = isIP(addr ?? "");
    const maxBits = family === 6 ? 128 : 32;
    if (family === 0 || rest.length > 0 || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= maxBits))) {
      throw new Error(`BERTH_TRUST_PROXY must be true, a hop count, or addresses and CIDR ranges separated by commas, got ${JSON.stringify(raw)}`);
    }
  }
  return entries;
}

/**
 * Who may create an account (BERTH_REGISTRATION): `open` (anyone registers and gets an
 * organisation of their own; the default), `invite` (an account is made only by accepting an
 * invitation) or `closed` (no account is made through the API: invitations are accepted by
 * existing accounts only, and accounts are made with `npm run admin:create`).
 */
export const REGISTRATION_MODES = ["open", "invite", "closed"] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

export function registrationMode(env: NodeJS.ProcessEnv = process.env): RegistrationMode {
  const raw = (env.BERTH_REGISTRATION ?? "").trim() || "open";
  if (!(REGISTRATION_MODES as readonly string[]).includes(raw)) {
    throw new Error(`BERTH_REGISTRATION must be one of ${REGISTRATION_MODES.join(", ")}, got ${JSON.stringify(raw)}`);
  }
  return raw as RegistrationMode;
}

/**
 * Outgoing mail: BERTH_SMTP_URL (smtp://user:password@host:587, or smtps://… for TLS from the
 * first byte) and BERTH_MAIL_FROM. Without an SMTP URL, messages are written to the log
 * (development: the invitation link is there).
 */
export function mailSettings(env: NodeJS.ProcessEnv = process.env): { smtpUrl?: string; from: string } {
  const from = (env.BERTH_MAIL_FROM ?? "").trim() || "Berth <no-reply@localhost>";
  const smtpUrl = (env.BERTH_SMTP_URL ?? "").trim();
  if (smtpUrl === "") return { from };
  if (!/^smtps?:\/\/[^\s]+$/.test(smtpUrl)) throw new Error("BERTH_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…");
  return { smtpUrl, from };
}

/**
 * The agent link's limits as an operator may set them (each a positive integer; unset: the
 * default in modules/agents/link/limits.ts): BERTH_AGENT_LOG_LINES_PER_MINUTE and
 * BERTH_AGENT_LOG_BYTES_PER_MINUTE per server, BERTH_AGENT_HANDSHAKES_PER_ADDRESS and
 * BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE per client address (raise these when many agents
 * reach the control plane from one address, e.g. through NAT).
 */
export function agentLimitSettings(env: NodeJS.ProcessEnv = process.env): Partial<Record<"logLinesPerMinute" | "logBytesPerMinute" | "handshakesPerAddress" | "hellosPerAddressPerMinute", number>> {
  const names = {
    logLinesPerMinute: "BERTH_AGENT_LOG_LINES_PER_MINUTE",
    logBytesPerMinute: "BERTH_AGENT_LOG_BYTES_PER_MINUTE",
    handshakesPerAddress: "BERTH_AGENT_HANDSHAKES_PER_ADDRESS",
    hellosPerAddressPerMinute: "BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE",
  } as const;
  const out: Partial<Record<keyof typeof names, number>> = {};
  for (const [key, name] of Object.entries(names) as [keyof typeof names, string][]) {
    const raw = (env[name] ?? "").trim();
    if (raw === "") continue;
    if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`);
    out[key] = Number(raw);
  }
  return out;
}

/**
 * BERTH_BASE_DOMAIN: the domain under which environments without a domain of their own get a
 * generated name (`<name>-<8 hex of its id>.<base domain>`; point a wildcard DNS record
 * `*.<base domain>` at the servers). Unset: such environments have no URL.
 */
export function baseDomainSetting(env: NodeJS.ProcessEnv = process.env): string | null {
  const raw = (env.BERTH_BASE_DOMAIN ?? "").trim();
  if (raw === "") return null;
  const name = raw.toLowerCase();
  const problem = hostnameProblem(name) ?? (name.length > MAX_BASE_DOMAIN_LENGTH ? `is longer than ${MAX_BASE_DOMAIN_LENGTH} characters` : null);
  if (problem) throw new Error(`BERTH_BASE_DOMAIN ${problem}, got ${JSON.stringify(raw)}`);
  return name;
}

/**
 * Every server's reverse proxy, sent with each deploy: BERTH_PROXY_IMAGE (default caddy:2),
 * BERTH_ACME_CA (the ACME directory URL, https; unset: Let's Encrypt), BERTH_ACME_CA_ROOT (a
 * PEM file with the CA that signed the ACME server's TLS certificate, for a private ACME
 * server; read once, at start) and BERTH_ACME_EMAIL (where the CA sends expiry notices).
 */
export function proxySettings(env: NodeJS.ProcessEnv = process.env, read: (file: string) => string = (f) => readFileSync(f, "utf8")): ProxySettings {
  const value = (name: string) => (env[name] ?? "").trim();
  let root: string | null = null;
  const rootFile = value("BERTH_ACME_CA_ROOT");
  if (rootFile !== "") {
    try {
      root = read(rootFile);
    } catch (err) {
      throw new Error(`BERTH_ACME_CA_ROOT names a file that cannot be read (${rootFile}): ${(err as Error).message}`);
    }
    if (!root.includes("-----BEGIN CERTIFICATE-----")) throw new Error(`BERTH_ACME_CA_ROOT must name a PEM file holding a certificate, and ${rootFile} holds none`);
  }
  const settings: ProxySettings = {
    image: value("BERTH_PROXY_IMAGE") || "caddy:2",
    acme_ca: value("BERTH_ACME_CA") || null,
    acme_ca_root: root,
    acme_email: value("BERTH_ACME_EMAIL") || null,
  };
  const problem = [...Value.Errors(ProxySettings, settings)][0];
  if (problem) {
    const name = { "/image": "BERTH_PROXY_IMAGE", "/acme_ca": "BERTH_ACME_CA", "/acme_ca_root": "BERTH_ACME_CA_ROOT", "/acme_email": "BERTH_ACME_EMAIL" }[problem.path] ?? problem.path;
    throw new Error(`${name} ${problem.message}${name === "BERTH_ACME_CA" ? " (an https:// URL of an ACME directory)" : ""}`);
  }
  return settings;
}

/**
 * Where backups are kept once their server uploaded them (the backup store, lib/object-store):
 * an S3-compatible bucket when BERTH_BACKUP_S3_BUCKET is set (BERTH_BACKUP_S3_ENDPOINT for a
 * service other than AWS, e.g. http://minio:9000; BERTH_BACKUP_S3_REGION, default us-east-1;
 * BERTH_BACKUP_S3_ACCESS_KEY_ID and BERTH_BACKUP_S3_SECRET_ACCESS_KEY, else the SDK's own
 * credential chain; BERTH_BACKUP_S3_PREFIX, e.g. berth/; BERTH_BACKUP_S3_FORCE_PATH_STYLE,
 * default true with an endpoint), else the folder BERTH_BACKUP_DIR (default <data dir>/backups).
 */
export function backupStoreSettings(env: NodeJS.ProcessEnv = process.env, dataDir = loadConfig().dataDir): ObjectStoreSettings {
  const value = (name: string) => (env[name] ?? "").trim();
  const bucket = value("BERTH_BACKUP_S3_BUCKET");
  if (bucket === "") {
    const dir = value("BERTH_BACKUP_DIR");
    return { kind: "local", dir: dir === "" ? path.join(dataDir, "backups") : path.resolve(env.INIT_CWD ?? process.cwd(), dir) };
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) throw new Error(`BERTH_BACKUP_S3_BUCKET must be a bucket name (3-63 of a-z 0-9 . -), got ${JSON.stringify(bucket)}`);
  const endpoint = value("BERTH_BACKUP_S3_ENDPOINT");
  if (endpoint !== "" && !/^https?:\/\/[^\s/]+\/?$/.test(endpoint)) throw new Error(`BERTH_BACKUP_S3_ENDPOINT must be an origin like https://s3.example.com, got ${JSON.stringify(endpoint)}`);
  const keyId = value("BERTH_BACKUP_S3_ACCESS_KEY_ID");
  const secret = value("BERTH_BACKUP_S3_SECRET_ACCESS_KEY");
  if ((keyId === "") !== (secret === "")) throw new Error("BERTH_BACKUP_S3_ACCESS_KEY_ID and BERTH_BACKUP_S3_SECRET_ACCESS_KEY go together: set both, or neither (the SDK's credential chain)");
  const prefix = value("BERTH_BACKUP_S3_PREFIX");
  if (prefix !== "" && !/^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)+$/.test(prefix)) throw new Error(`BERTH_BACKUP_S3_PREFIX must be folder names each ending in /, like berth/, got ${JSON.stringify(prefix)}`);
  const pathStyle = value("BERTH_BACKUP_S3_FORCE_PATH_STYLE").toLowerCase();
  if (pathStyle !== "" && pathStyle !== "true" && pathStyle !== "false") throw new Error(`BERTH_BACKUP_S3_FORCE_PATH_STYLE must be true or false, got ${JSON.stringify(pathStyle)}`);
  return {
    kind: "s3",
    bucket,
    region: value("BERTH_BACKUP_S3_REGION") || "us-east-1",
    ...(endpoint === "" ? {} : { endpoint: endpoint.replace(/\/$/, "") }),
    ...(keyId === "" ? {} : { accessKeyId: keyId, secretAccessKey: secret }),
    ...(prefix === "" ? {} : { prefix }),
    ...(pathStyle === "" ? {} : { forcePathStyle: pathStyle === "true" }),
  };
}

/** Where resumable migration uploads are assembled before they move into the backup store: BERTH_MIGRATION_UPLOAD_DIR, default <data dir>/migration-uploads. */
export function migrationUploadDir(env: NodeJS.ProcessEnv = process.env, dataDir = loadConfig().dataDir): string {
  const dir = (env.BERTH_MIGRATION_UPLOAD_DIR ?? "").trim();
  return dir === "" ? path.join(dataDir, "migration-uploads") : path.resolve(env.INIT_CWD ?? process.cwd(), dir);
}

/**
 * GET /metrics (Prometheus text format): off unless BERTH_METRICS=on (then open to anyone who
 * reaches the port: keep it off the public interface) or BERTH_METRICS_TOKEN is set (then on,
 * and only with `Authorization: Bearer <token>`; at least 16 characters).
 */
export function metricsSetting(env: NodeJS.ProcessEnv = process.env): { enabled: boolean; token: string | null } {
  const mode = (env.BERTH_METRICS ?? "").trim().toLowerCase();
  if (mode !== "" && mode !== "on" && mode !== "off") throw new Error(`BERTH_METRICS must be on or off, got ${JSON.stringify(mode)}`);
  const token = (env.BERTH_METRICS_TOKEN ?? "").trim();
  if (token !== "" && !/^[\x21-\x7e]{16,256}$/.test(token)) throw new Error("BERTH_METRICS_TOKEN must be 16 to 256 visible ASCII characters");
  if (token !== "" && mode === "off") throw new Error("BERTH_METRICS=off and BERTH_METRICS_TOKEN contradict each other: unset one");
  return { enabled: mode === "on" || token !== "", token: token === "" ? null : token };
}
