// The reverse proxy's settings on this server, from BERTH_PROXY_* and friends (parsed in
// settings.ts). Everything about certificates (image, ACME directory) comes from the control
// plane instead: these are the facts only the server's administrator knows (ports,
// addresses, resolvers).
import type { SettingValues } from "@berth/protocol";
import { DEFAULT_PROXY_HOST, type ProxyHostSettings } from "../proxy/proxy-container.ts";
import type { AGENT_SETTINGS } from "./settings.ts";

export const PROXY_SETTING_KEYS = [
  "proxyName",
  "proxyHttpPort",
  "proxyHttpsPort",
  "proxyBind",
  "publicAddresses",
  "dnsServers",
  "proxyCheckInterval",
  "certificateWait",
] as const;

type ProxyValues = Pick<SettingValues<typeof AGENT_SETTINGS>, (typeof PROXY_SETTING_KEYS)[number]>;

export function proxyHostSettings(v: ProxyValues): ProxyHostSettings {
  return {
    name: v.proxyName,
    httpPort: v.proxyHttpPort,
    httpsPort: v.proxyHttpsPort,
    bindAddress: v.proxyBind ?? DEFAULT_PROXY_HOST.bindAddress,
    publicAddresses: v.publicAddresses ?? null,
    dnsServers: v.dnsServers ?? null,
    checkIntervalMs: v.proxyCheckInterval,
    certificateWaitMs: v.certificateWait,
  };
}
