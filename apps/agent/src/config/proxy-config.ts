// The reverse proxy's settings on this server, from BERTH_PROXY_* and friends. Everything
// about certificates (image, ACME directory) comes from the control plane instead: these are
// the facts only the server's administrator knows (ports, addresses, resolvers).
import { isIP } from "node:net";
import { DEFAULT_PROXY_HOST, type ProxyHostSettings } from "../proxy/proxy-container.ts";
import { ConfigError, type Env } from "./config-error.ts";

const DOCKER_NAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,62}$/;

export function proxyHostFromEnv(env: Env): ProxyHostSettings {
  const name = text(env.BERTH_PROXY_NAME) ?? DEFAULT_PROXY_HOST.name;
  if (!DOCKER_NAME.test(name)) throw new ConfigError(`BERTH_PROXY_NAME must be a Docker container name (got "${name}")`);
  const bind = text(env.BERTH_PROXY_BIND) ?? DEFAULT_PROXY_HOST.bindAddress;
  if (bind !== "" && isIP(bind) === 0) throw new ConfigError(`BERTH_PROXY_BIND must be an IP address (got "${bind}")`);
  return {
    name,
    httpPort: port("BERTH_PROXY_HTTP_PORT", env.BERTH_PROXY_HTTP_PORT) ?? DEFAULT_PROXY_HOST.httpPort,
    httpsPort: port("BERTH_PROXY_HTTPS_PORT", env.BERTH_PROXY_HTTPS_PORT) ?? DEFAULT_PROXY_HOST.httpsPort,
    bindAddress: bind,
    publicAddresses: list(env.BERTH_PUBLIC_ADDRESSES, "BERTH_PUBLIC_ADDRESSES", (a) => isIP(a) !== 0, "IP addresses"),
    dnsServers: list(env.BERTH_DNS_SERVERS, "BERTH_DNS_SERVERS", isResolver, "IP addresses, each with an optional :port"),
    checkIntervalMs: seconds("BERTH_PROXY_CHECK_INTERVAL", env.BERTH_PROXY_CHECK_INTERVAL, 5, 86_400) ?? DEFAULT_PROXY_HOST.checkIntervalMs,
    certificateWaitMs: seconds("BERTH_CERTIFICATE_WAIT", env.BERTH_CERTIFICATE_WAIT, 0, 600) ?? DEFAULT_PROXY_HOST.certificateWaitMs,
  };
}

function text(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/** A port number, or "auto" for one Docker chooses (tests running several agents on one host). */
function port(name: string, value: string | undefined): string | undefined {
  const v = text(value);
  if (v === undefined) return undefined;
  if (v === "auto") return "";
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) throw new ConfigError(`${name} must be a port number or "auto" (got "${v}")`);
  return String(n);
}

function list(value: string | undefined, name: string, valid: (item: string) => boolean, what: string): string[] | null {
  const v = text(value);
  if (v === undefined) return null;
  const items = v.split(",").map((item) => item.trim()).filter((item) => item !== "");
  const bad = items.find((item) => !valid(item));
  if (bad !== undefined) throw new ConfigError(`${name} must list ${what} separated by commas (got "${bad}")`);
  return items;
}

function isResolver(item: string): boolean {
  if (isIP(item) !== 0) return true;
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(item);
  if (bracketed) return isIP(bracketed[1]!) === 6 && Number(bracketed[2]) <= 65_535;
  const [address, p, ...rest] = item.split(":");
  return rest.length === 0 && address !== undefined && isIP(address) === 4 && /^\d{1,5}$/.test(p ?? "") && Number(p) <= 65_535;
}

function seconds(name: string, value: string | undefined, min: number, max: number): number | undefined {
  const v = text(value);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min || n > max) throw new ConfigError(`${name} must be a number of seconds from ${min} to ${max} (got "${v}")`);
  return n * 1000;
}
