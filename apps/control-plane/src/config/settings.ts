// Every setting of the control plane (and of its npm scripts), each parsed here and nowhere
// else: name, former names, default, description, secrecy and parser. config.ts groups them
// for their callers; `npm run docs:settings` writes docs/settings.md and .env.example from
// this list, in this order.
import { isIP } from "node:net";
import path from "node:path";
import { setting, type SettingsEnv } from "@berth/protocol";
import { parseAllowList } from "../lib/outbound/address-policy.ts";
import { parseKey } from "../lib/master-key.ts";
import { DEFAULT_LINK_LIMITS } from "../modules/agents/link/limits.ts";
import { hostnameProblem, MAX_BASE_DOMAIN_LENGTH } from "../modules/environments/domains.ts";
import { DEFAULT_RETENTION } from "../modules/retention/retention.ts";
import { DEFAULT_UPLOAD_QUOTA_BYTES } from "../modules/migrations/intake/upload-limits.ts";

/** pino's levels, which the control plane's logger takes. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Who may create an account: `open` (anyone registers and gets an organisation of their own),
 * `invite` (only by accepting an invitation) or `closed` (no account is made through the API).
 */
export const REGISTRATION_MODES = ["open", "invite", "closed"] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

function port(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(raw)}`);
    return n;
  };
}

/** A file or folder; relative ones are taken from where the command was typed (npm runs workspace scripts elsewhere and says where in INIT_CWD). */
function localPath(raw: string, env: SettingsEnv): string {
  return path.resolve(env.INIT_CWD ?? process.cwd(), raw);
}

function positiveWhole(name: string) {
  return (raw: string): number => {
    if (!/^[1-9][0-9]{0,14}$/.test(raw)) throw new Error(`${name} must be a positive whole number, got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}

/** Milliseconds from 0 to `max`. */
function millis(name: string, max: number) {
  return (raw: string): number => {
    if (!/^[0-9]{1,9}$/.test(raw) || Number(raw) > max) throw new Error(`${name} must be a whole number of milliseconds from 0 to ${max}, got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}

function days(name: string) {
  return (raw: string): number => {
    if (!/^(?:0|[1-9][0-9]{0,5})$/.test(raw)) throw new Error(`${name} must be a whole number of days (0 keeps for good), got ${JSON.stringify(raw)}`);
    return Number(raw);
  };
}

function trustProxy(raw: string): boolean | number | string[] | undefined {
  if (raw === "false") return undefined;
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

export const CONTROL_PLANE_SETTINGS = {
  port: setting({ name: "BERTH_PORT", oldNames: ["PORT"], default: "3000", description: "The port the API and the dashboard listen on", parse: port("BERTH_PORT") }),
  host: setting({
    name: "BERTH_HOST",
    oldNames: ["HOST"],
    default: "127.0.0.1",
    description: "The address it listens on (`0.0.0.0`: every interface)",
    parse: (raw) => raw,
  }),
  logLevel: setting({
    name: "BERTH_LOG_LEVEL",
    oldNames: ["LOG_LEVEL"],
    default: "info",
    description: `How much it logs: ${LOG_LEVELS.join(", ")}`,
    parse: (raw): LogLevel => {
      const level = raw.toLowerCase();
      if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new Error(`BERTH_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got ${JSON.stringify(raw)}`);
      return level as LogLevel;
    },
  }),
  databaseUrl: setting({
    name: "DATABASE_URL",
    defaultText: "an embedded PostgreSQL in `<BERTH_DATA_DIR>/postgres`",
    secret: true,
    description: "The PostgreSQL database (`postgres://user:password@host:5432/berth`)",
    parse: (raw) => {
      if (!/^postgres(ql)?:\/\/\S*$/.test(raw)) throw new Error("DATABASE_URL must be a postgres:// or postgresql:// URL");
      return raw;
    },
  }),
  dataDir: setting({
    name: "BERTH_DATA_DIR",
    default: ".data",
    description: "Where the embedded PostgreSQL, the master key file, backups and uploads are kept (relative: to where the command was typed)",
    parse: localPath,
  }),
  embeddedPgPort: setting({
    name: "BERTH_EMBEDDED_PG_PORT",
    default: "54329",
    description: "The port of the embedded PostgreSQL on 127.0.0.1 (without DATABASE_URL)",
    parse: port("BERTH_EMBEDDED_PG_PORT"),
  }),
  masterKey: setting({
    name: "BERTH_MASTER_KEY",
    defaultText: "`<BERTH_DATA_DIR>/master.key`, made on first start",
    secret: true,
    description: "32 bytes base64 (`openssl rand -base64 32`) that seal secrets at rest; every replica shares it",
    parse: (raw) => parseKey(raw, "BERTH_MASTER_KEY"),
  }),
  publicUrl: setting({
    name: "BERTH_PUBLIC_URL",
    defaultText: "the request's origin",
    description: "The URL people and servers reach the control plane at (install command, invitation links, download links)",
    parse: (raw) => {
      if (!/^https?:\/\/[^/]+\/?$/.test(raw)) throw new Error(`BERTH_PUBLIC_URL must be an origin like https://berth.example.com, got ${JSON.stringify(raw)}`);
      return raw.replace(/\/$/, "");
    },
  }),
  agentDistDir: setting({
    name: "BERTH_AGENT_DIST_DIR",
    defaultText: "`installers/dist` (npm run build:agent's output)",
    description: "Where the agent executables and installers are served from",
    parse: localPath,
  }),
  registration: setting({
    name: "BERTH_REGISTRATION",
    default: "open",
    description:
      "Who may create an account: `open` (anyone; they own a new organisation), `invite` (by accepting an invitation) or `closed` (accounts are made with `npm run admin:create`)",
    parse: (raw): RegistrationMode => {
      if (!(REGISTRATION_MODES as readonly string[]).includes(raw)) {
        throw new Error(`BERTH_REGISTRATION must be one of ${REGISTRATION_MODES.join(", ")}, got ${JSON.stringify(raw)}`);
      }
      return raw as RegistrationMode;
    },
  }),
  smtpUrl: setting({
    name: "BERTH_SMTP_URL",
    defaultText: "none (mail is written to the log)",
    secret: true,
    description: "Where invitations are sent: `smtp://user:password@host:587`, or `smtps://…` for TLS from the first byte",
    parse: (raw) => {
      if (!/^smtps?:\/\/[^\s]+$/.test(raw)) throw new Error("BERTH_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…");
      return raw;
    },
  }),
  mailFrom: setting({ name: "BERTH_MAIL_FROM", default: "Berth <no-reply@localhost>", description: "The sender of invitations", parse: (raw) => raw }),
  trustProxy: setting({
    name: "BERTH_TRUST_PROXY",
    defaultText: "none",
    description:
      "Whose `X-Forwarded-For` (and `X-Request-Id`) to believe: `true`, a hop count, or addresses and CIDR ranges (`127.0.0.1,10.0.0.0/8`); set it behind a reverse proxy",
    parse: trustProxy,
  }),
  outboundAllow: setting({
    name: "BERTH_OUTBOUND_ALLOW",
    defaultText: "none",
    description: "Hosts, addresses and CIDR ranges (comma-separated) outgoing webhooks may reach although private or loopback",
    parse: (raw) => {
      const entries = raw.split(",").map((e) => e.trim()).filter((e) => e !== "");
      try {
        parseAllowList(entries);
      } catch (err) {
        throw new Error(`BERTH_OUTBOUND_ALLOW must list hosts, addresses or CIDR ranges separated by commas: ${(err as Error).message}`);
      }
      return entries;
    },
  }),
  metrics: setting({
    name: "BERTH_METRICS",
    defaultText: "`off` (`on` with a token)",
    description: "`on`: serve `GET /metrics` (Prometheus) to anyone who reaches the port; keep it off the public interface, or set a token instead",
    parse: (raw) => {
      const mode = raw.toLowerCase();
      if (mode !== "on" && mode !== "off") throw new Error(`BERTH_METRICS must be on or off, got ${JSON.stringify(mode)}`);
      return mode === "on";
    },
  }),
  metricsToken: setting({
    name: "BERTH_METRICS_TOKEN",
    defaultText: "none",
    secret: true,
    description: "Serve `GET /metrics` only with `Authorization: Bearer <token>` (16-256 visible characters; turns metrics on by itself)",
    parse: (raw) => {
      if (!/^[\x21-\x7e]{16,256}$/.test(raw)) throw new Error("BERTH_METRICS_TOKEN must be 16 to 256 visible ASCII characters");
      return raw;
    },
  }),
  agentLogLinesPerMinute: setting({
    name: "BERTH_AGENT_LOG_LINES_PER_MINUTE",
    defaultText: String(DEFAULT_LINK_LIMITS.logLinesPerMinute),
    description: "Log lines a server's agent may store a minute; past it lines are acknowledged, not stored, and a notice line says so",
    parse: positiveWhole("BERTH_AGENT_LOG_LINES_PER_MINUTE"),
  }),
  agentLogBytesPerMinute: setting({
    name: "BERTH_AGENT_LOG_BYTES_PER_MINUTE",
    defaultText: `${DEFAULT_LINK_LIMITS.logBytesPerMinute} (64 MiB)`,
    description: "Bytes of log text a server's agent may store a minute",
    parse: positiveWhole("BERTH_AGENT_LOG_BYTES_PER_MINUTE"),
  }),
  agentHandshakesPerAddress: setting({
    name: "BERTH_AGENT_HANDSHAKES_PER_ADDRESS",
    defaultText: String(DEFAULT_LINK_LIMITS.handshakesPerAddress),
    description: "Unauthenticated agent connections one address may hold, per replica (raise it when many agents share an address, e.g. NAT)",
    parse: positiveWhole("BERTH_AGENT_HANDSHAKES_PER_ADDRESS"),
  }),
  agentHellosPerAddressPerMinute: setting({
    name: "BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE",
    defaultText: String(DEFAULT_LINK_LIMITS.hellosPerAddressPerMinute),
    description: "Agent handshakes one address may start a minute, per replica",
    parse: positiveWhole("BERTH_AGENT_HELLOS_PER_ADDRESS_PER_MINUTE"),
  }),
  // Graceful drain of a replica on SIGTERM (lifecycle/drain.ts).
  drainSettleMs: setting({
    name: "BERTH_DRAIN_SETTLE_MS",
    default: "2000",
    description: "On SIGTERM: how long `/readyz` answers 503 before the replica hands its agents over, so the load balancer stops sending it new work",
    parse: millis("BERTH_DRAIN_SETTLE_MS", 600_000),
  }),
  drainHandoverMs: setting({
    name: "BERTH_DRAIN_HANDOVER_MS",
    default: "10000",
    description: "On SIGTERM: the window over which the replica's agents are closed (code 1012) one after another, so they do not all reconnect to the others at once",
    parse: millis("BERTH_DRAIN_HANDOVER_MS", 600_000),
  }),
  drainTimeoutMs: setting({
    name: "BERTH_DRAIN_TIMEOUT_MS",
    default: "30000",
    description: "On SIGTERM: the whole drain's deadline; past it the process exits (code 1) and logs what was still open",
    parse: millis("BERTH_DRAIN_TIMEOUT_MS", 3_600_000),
  }),
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
  backupDir: setting({
    name: "BERTH_BACKUP_DIR",
    defaultText: "`<BERTH_DATA_DIR>/backups`",
    description: "The backup store on the control plane's disk: every file of every backup its servers upload (unless a bucket is set)",
    parse: localPath,
  }),
  backupS3Bucket: setting({
    name: "BERTH_BACKUP_S3_BUCKET",
    defaultText: "none (the folder BERTH_BACKUP_DIR)",
    description: "Keep the backups in this bucket of an S3-compatible store instead",
    parse: (raw) => {
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_BUCKET must be a bucket name (3-63 of a-z 0-9 . -), got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  backupS3Endpoint: setting({
    name: "BERTH_BACKUP_S3_ENDPOINT",
    defaultText: "AWS",
    description: "The store's origin when it is not AWS, e.g. `http://minio:9000`",
    parse: (raw) => {
      if (!/^https?:\/\/[^\s/]+\/?$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_ENDPOINT must be an origin like https://s3.example.com, got ${JSON.stringify(raw)}`);
      return raw.replace(/\/$/, "");
    },
  }),
  backupS3Region: setting({ name: "BERTH_BACKUP_S3_REGION", default: "us-east-1", description: "The bucket's region", parse: (raw) => raw }),
  backupS3AccessKeyId: setting({
    name: "BERTH_BACKUP_S3_ACCESS_KEY_ID",
    defaultText: "the AWS SDK's credential chain",
    description: "The store's access key id (with BERTH_BACKUP_S3_SECRET_ACCESS_KEY)",
    parse: (raw) => raw,
  }),
  backupS3SecretAccessKey: setting({
    name: "BERTH_BACKUP_S3_SECRET_ACCESS_KEY",
    defaultText: "the AWS SDK's credential chain",
    secret: true,
    description: "The store's secret access key (with BERTH_BACKUP_S3_ACCESS_KEY_ID)",
    parse: (raw) => raw,
  }),
  backupS3Prefix: setting({
    name: "BERTH_BACKUP_S3_PREFIX",
    defaultText: "none",
    description: "Folders in the bucket the backups go under, each ending in `/`, e.g. `berth/`",
    parse: (raw) => {
      if (!/^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/)+$/.test(raw)) throw new Error(`BERTH_BACKUP_S3_PREFIX must be folder names each ending in /, like berth/, got ${JSON.stringify(raw)}`);
      return raw;
    },
  }),
  backupS3ForcePathStyle: setting({
    name: "BERTH_BACKUP_S3_FORCE_PATH_STYLE",
    defaultText: "true with an endpoint",
    description: "`true`: address the bucket as `<endpoint>/<bucket>` rather than `<bucket>.<endpoint>`",
    parse: (raw) => {
      const value = raw.toLowerCase();
      if (value !== "true" && value !== "false") throw new Error(`BERTH_BACKUP_S3_FORCE_PATH_STYLE must be true or false, got ${JSON.stringify(value)}`);
      return value === "true";
    },
  }),
  migrationUploadDir: setting({
    name: "BERTH_MIGRATION_UPLOAD_DIR",
    defaultText: "`<BERTH_DATA_DIR>/migration-uploads`",
    description: "Where resumable migration uploads and import-URL downloads are assembled before they move, verified, into the backup store",
    parse: localPath,
  }),
  migrationQuotaBytes: setting({
    name: "BERTH_MIGRATION_QUOTA_BYTES",
    default: String(DEFAULT_UPLOAD_QUOTA_BYTES),
    description:
      "Bytes one organisation's migration backups may take (200 GiB by default): those stored (until the migration is deleted, or a cancelled or failed one is cleaned up) and those being uploaded or imported (their declared size). An upload/init, resumable upload or import-url past it is refused with 413 upload_quota_exceeded; an import without a Content-Length stops where it ends",
    parse: positiveWhole("BERTH_MIGRATION_QUOTA_BYTES"),
  }),
  logRetentionDays: setting({
    name: "BERTH_LOG_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.logDays),
    description:
      "Days a deployment's log lines are kept; `0` keeps them as long as the deployment record (records are never deleted). " +
      "The platform spec states both a 90-day cleanup and keeping logs for the life of the record: the default is the cleanup, `0` the other. " +
      "Whole months expire at once, so a line goes between this many days and a month later",
    parse: days("BERTH_LOG_RETENTION_DAYS"),
  }),
  agentEventRetentionDays: setting({
    name: "BERTH_AGENT_EVENT_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.agentEventDays),
    description:
      "Days the raw journal of what agents sent (steps, results, server logs; the table agent_events) is kept for support and audit; nothing in the product reads it back. `0` keeps it for good",
    parse: days("BERTH_AGENT_EVENT_RETENTION_DAYS"),
  }),
  commandRetentionDays: setting({
    name: "BERTH_COMMAND_RETENTION_DAYS",
    default: String(DEFAULT_RETENTION.commandDays),
    description:
      "Days an ended command to an agent (the table agent_commands: type, times, outcome, result; no secret once it was taken) is kept after its issue. " +
      "Commands named by an audit entry (the support console's) are kept for good, as the audit log shows their outcome. `0` keeps every command for good",
    parse: days("BERTH_COMMAND_RETENTION_DAYS"),
  }),
  adminPassword: setting({
    name: "BERTH_ADMIN_PASSWORD",
    defaultText: "read from stdin",
    secret: true,
    keepSpaces: true,
    description: "`npm run admin:create` only: the new account's password",
    parse: (raw) => raw,
  }),
  seedDemoUrl: setting({
    name: "BERTH_URL",
    defaultText: "`http://<BERTH_HOST>:<BERTH_PORT>`",
    description: "`npm run seed:demo` only: the control plane's URL in the links it prints",
    parse: (raw) => raw.replace(/\/$/, ""),
  }),
} as const;

export type ControlPlaneSettingKey = keyof typeof CONTROL_PLANE_SETTINGS;
