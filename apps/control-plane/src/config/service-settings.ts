// The settings of the service itself: where it listens, its database and master key, its
// public URL, who may register, mail, the proxies it trusts, outgoing webhooks and metrics.
import { isIP } from "node:net";
import { setting } from "@berth/protocol";
import { parseAllowList } from "../lib/outbound/address-policy.ts";
import { parseKey } from "../lib/master-key.ts";
import { localPath, port } from "./setting-parsers.ts";

/** pino's levels, which the control plane's logger takes. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Who may create an account: `open` (anyone registers and gets an organisation of their own),
 * `invite` (only by accepting an invitation) or `closed` (no account is made through the API).
 */
export const REGISTRATION_MODES = ["open", "invite", "closed"] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

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

export const SERVICE_SETTINGS = {
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
} as const;
