// The proxy's desired state, kept by the agent: the administrator's proxy settings and every
// environment's route with its last DNS answers. The Caddy configuration is rendered from
// it, so the proxy restarted, recreated or adopted after an agent reinstall gets exactly
// these routes back.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ProxySettings } from "@berth/protocol";
import { writeFileAtomic } from "../state/atomic-write.ts";
import type { RouteSpec } from "./caddy-config.ts";
import type { DnsAnswer } from "./dns-check.ts";

export interface StoredRoute extends RouteSpec {
  /** The environment's Docker network, which the proxy joins to reach the ERP. */
  network: string;
  /** The last answer per name. */
  dns: Record<string, DnsAnswer>;
}

export interface ProxyDesiredState {
  settings: ProxySettings;
  routes: StoredRoute[];
}

/** The official image; an administrator's setting (BERTH_PROXY_IMAGE) replaces it through the deploy command. */
export const DEFAULT_PROXY_SETTINGS: ProxySettings = { image: "caddy:2", acme_ca: null, acme_ca_root: null, acme_email: null };

export interface RouteStore {
  read(): ProxyDesiredState;
  write(state: ProxyDesiredState): void;
}

export function createRouteStore(dir: string): RouteStore {
  const file = join(dir, "routes.json");
  return {
    read() {
      try {
        const parsed = JSON.parse(readFileSync(file, "utf8")) as Partial<ProxyDesiredState>;
        return { settings: { ...DEFAULT_PROXY_SETTINGS, ...parsed.settings }, routes: parsed.routes ?? [] };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return { settings: DEFAULT_PROXY_SETTINGS, routes: [] };
        throw error;
      }
    },
    write(state) {
      mkdirSync(dir, { recursive: true, mode: 0o755 });
      writeFileAtomic(file, `${JSON.stringify(state, null, 2)}\n`, 0o600);
    },
  };
}
