// Every environment setting of the agent, each parsed here and nowhere else: name, former
// names, default, description, secrecy and parser (the loader is @berth/protocol's, without
// a schema library, to keep the executable small). agent-config.ts puts them together with
// the command-line flags; `npm run docs:settings` writes apps/control-plane/docs/settings.md from this list.
import { isIP } from "node:net";
import { isAbsolute, resolve } from "node:path";
import { rawSetting, setting, type SettingsEnv } from "@berth/protocol";
import { LOG_LEVEL_NAMES, type LogLevelName } from "../logger.ts";
import { DEFAULT_PROXY_HOST } from "../proxy/proxy-container.ts";
import { DEFAULT_BACKUPS_KEPT_LOCALLY } from "../executor/runner/executor-deps.ts";
import { DEFAULT_MAIL_CATCHER } from "../mail/mail-catcher-host.ts";

export const DEFAULT_STATE_DIR = "/var/lib/berth-agent";
export const DEFAULT_DOCKER_SOCKET = "/var/run/docker.sock";

const DOCKER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

/** A Docker object's name (`kind`: what the setting names, e.g. "container", "network"). */
function dockerName(name: string, kind: string) {
  return (raw: string): string => {
    if (!DOCKER_NAME.test(raw)) throw new Error(`${name} must be a Docker ${kind} name (got "${raw}")`);
    return raw;
  };
}

/** A port number, or "auto" for one the system chooses (tests running several agents on one host). */
function hostPort(name: string) {
  return (raw: string): string => {
    if (raw === "auto") return "";
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > 65_535) throw new Error(`${name} must be a port number or "auto" (got "${raw}")`);
    return String(n);
  };
}

function list(name: string, valid: (item: string) => boolean, what: string) {
  return (raw: string): string[] => {
    const items = raw.split(",").map((item) => item.trim()).filter((item) => item !== "");
    const bad = items.find((item) => !valid(item));
    if (bad !== undefined) throw new Error(`${name} must list ${what} separated by commas (got "${bad}")`);
    return items;
  };
}

function isResolver(item: string): boolean {
  if (isIP(item) !== 0) return true;
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(item);
  if (bracketed) return isIP(bracketed[1]!) === 6 && Number(bracketed[2]) <= 65_535;
  const [address, p, ...rest] = item.split(":");
  return rest.length === 0 && address !== undefined && isIP(address) === 4 && /^\d{1,5}$/.test(p ?? "") && Number(p) <= 65_535;
}

/** Seconds, returned as milliseconds. */
function seconds(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || n > max) throw new Error(`${name} must be a number of seconds from ${min} to ${max} (got "${raw}")`);
    return n * 1000;
  };
}

export const AGENT_SETTINGS = {
  url: setting({ name: "BERTH_URL", defaultText: "none", description: "`enroll`: the control plane's URL (or `--url`)", parse: (raw) => raw }),
  token: setting({
    name: "BERTH_TOKEN",
    defaultText: "none",
    secret: true,
    description: "`enroll`: the one-time enrolment token (or `--token`, which the process list shows)",
    parse: (raw) => raw,
  }),
  stateDir: setting({
    name: "BERTH_STATE_DIR",
    default: DEFAULT_STATE_DIR,
    description: "Where the agent keeps its identity, keys and state (or `--state-dir`)",
    parse: (raw) => resolve(raw),
  }),
  insecure: setting({
    name: "BERTH_INSECURE",
    default: "false",
    description: "`true`: allow plain `http://` to a control plane on another machine (tests only; or `--insecure`)",
    parse: (raw) => {
      const lower = raw.toLowerCase();
      if (["1", "true", "yes", "on"].includes(lower)) return true;
      if (["0", "false", "no", "off"].includes(lower)) return false;
      throw new Error(`BERTH_INSECURE must be true or false (got "${raw}")`);
    },
  }),
  dockerSocket: setting({
    name: "BERTH_DOCKER_SOCKET",
    default: DEFAULT_DOCKER_SOCKET,
    description: "The Docker Engine's socket",
    parse: (raw) => {
      if (!isAbsolute(raw)) throw new Error(`BERTH_DOCKER_SOCKET must be an absolute path (got "${raw}")`);
      return raw;
    },
  }),
  logLevel: setting({
    name: "BERTH_LOG_LEVEL",
    default: "info",
    description: `How much it logs: ${LOG_LEVEL_NAMES.join(", ")}`,
    parse: (raw): LogLevelName => {
      const lower = raw.toLowerCase();
      if ((LOG_LEVEL_NAMES as readonly string[]).includes(lower)) return lower as LogLevelName;
      throw new Error(`BERTH_LOG_LEVEL must be one of ${LOG_LEVEL_NAMES.join(", ")} (got "${raw}")`);
    },
  }),
  backupsKeepLocal: setting({
    name: "BERTH_BACKUPS_KEEP_LOCAL",
    defaultText: String(DEFAULT_BACKUPS_KEPT_LOCALLY),
    description: "Backups per environment kept on the server once the control plane's backup store has them (0-100), for fast restores",
    parse: (raw) => {
      if (!/^[0-9]{1,3}$/.test(raw) || Number(raw) > 100) throw new Error(`BERTH_BACKUPS_KEEP_LOCAL must be a whole number from 0 to 100 (got "${raw}")`);
      return Number(raw);
    },
  }),
  proxyName: setting({
    name: "BERTH_PROXY_NAME",
    default: DEFAULT_PROXY_HOST.name,
    description: "The reverse proxy's container and network; its volume is `<name>-data`",
    parse: dockerName("BERTH_PROXY_NAME", "container"),
  }),
  proxyHttpPort: setting({
    name: "BERTH_PROXY_HTTP_PORT",
    default: DEFAULT_PROXY_HOST.httpPort,
    description: "The proxy's HTTP port on the host (`auto`: Docker chooses)",
    parse: hostPort("BERTH_PROXY_HTTP_PORT"),
  }),
  proxyHttpsPort: setting({
    name: "BERTH_PROXY_HTTPS_PORT",
    default: DEFAULT_PROXY_HOST.httpsPort,
    description: "The proxy's HTTPS port on the host (`auto`: Docker chooses)",
    parse: hostPort("BERTH_PROXY_HTTPS_PORT"),
  }),
  proxyBind: setting({
    name: "BERTH_PROXY_BIND",
    defaultText: "every address",
    description: "The host address the proxy listens on",
    parse: (raw) => {
      if (isIP(raw) === 0) throw new Error(`BERTH_PROXY_BIND must be an IP address (got "${raw}")`);
      return raw;
    },
  }),
  publicAddresses: setting({
    name: "BERTH_PUBLIC_ADDRESSES",
    defaultText: "the host's public interface addresses",
    description: "What domains must point to (set it behind NAT or a load balancer), comma-separated IP addresses",
    parse: list("BERTH_PUBLIC_ADDRESSES", (a) => isIP(a) !== 0, "IP addresses"),
  }),
  dnsServers: setting({
    name: "BERTH_DNS_SERVERS",
    defaultText: "the system's",
    description: "Resolvers for the DNS checks, `address` or `address:port`, comma-separated",
    parse: list("BERTH_DNS_SERVERS", isResolver, "IP addresses, each with an optional :port"),
  }),
  proxyCheckInterval: setting({
    name: "BERTH_PROXY_CHECK_INTERVAL",
    default: String(DEFAULT_PROXY_HOST.checkIntervalMs / 1000),
    description: "Seconds between checks of DNS and certificates (5-86400)",
    parse: seconds("BERTH_PROXY_CHECK_INTERVAL", 5, 86_400),
  }),
  certificateWait: setting({
    name: "BERTH_CERTIFICATE_WAIT",
    default: String(DEFAULT_PROXY_HOST.certificateWaitMs / 1000),
    description: "Seconds a deploy waits for a new certificate before it reports it as pending or refused (0-600)",
    parse: seconds("BERTH_CERTIFICATE_WAIT", 0, 600),
  }),
  mailNetwork: setting({
    name: "BERTH_MAIL_NETWORK",
    default: DEFAULT_MAIL_CATCHER.network,
    description: "The Docker network on whose host address the mail catcher of staging and development environments listens",
    parse: dockerName("BERTH_MAIL_NETWORK", "network"),
  }),
  mailPort: setting({
    name: "BERTH_MAIL_PORT",
    default: String(DEFAULT_MAIL_CATCHER.port),
    description: "The mail catcher's SMTP port on that address (`auto`: the system chooses)",
    parse: (raw) => Number(hostPort("BERTH_MAIL_PORT")(raw) || 0),
  }),
  nativeDir: setting({
    name: "BERTH_NATIVE_DIR",
    defaultText: "the temp folder, else the executable's folder",
    description: "Where the executable unpacks its native add-ons to load them (set it when /tmp is mounted noexec)",
    parse: (raw) => raw,
  }),
} as const;

/** One setting alone, for code that runs before the configuration is read (the native add-ons). */
export function agentSetting<K extends keyof typeof AGENT_SETTINGS>(key: K, env: SettingsEnv): ReturnType<(typeof AGENT_SETTINGS)[K]["read"]> {
  const decl = AGENT_SETTINGS[key];
  return decl.read(rawSetting(decl, env).text, env) as ReturnType<(typeof AGENT_SETTINGS)[K]["read"]>;
}
