// The reverse proxy's whole configuration, as Caddy's native JSON, from the routes the agent
// holds. Rendered in full on every change and loaded through Caddy's admin API, which swaps
// it without dropping connections. Pure: the same routes always give the same document.
import { HOSTNAME_PATTERN } from "@berth/protocol";

export interface RouteSpec {
  environmentId: string;
  /** The environment's domain first, then its aliases. */
  names: string[];
  /** The ERP container's name on the environment's network. */
  upstream: string;
  /** Workers > 0: Odoo serves /websocket and /longpolling on its gevent port only. */
  gevent: boolean;
  mode: "serving" | "maintenance";
}

export interface AcmeSettings {
  /** The ACME directory; null is Caddy's default (Let's Encrypt, with ZeroSSL as fallback). */
  ca: string | null;
  /** Path inside the proxy container of the PEM that signs the ACME server's TLS certificate. */
  caRootFile: string | null;
  email: string | null;
}

export interface CaddyConfigInput {
  routes: RouteSpec[];
  /** The names a certificate is requested for: those that resolve to this server. */
  certify: ReadonlySet<string>;
  acme: AcmeSettings;
}

export const ERP_PORT = 8069;
export const GEVENT_PORT = 8072;
/** Where Caddy keeps certificates and its ACME account: the proxy's data volume. */
export const PROXY_DATA_DIR = "/data";
/** Where the agent's files (this configuration, the ACME CA root) are mounted, read-only. */
export const PROXY_ETC_DIR = "/etc/berth-proxy";
export const PROXY_CONFIG_FILE = `${PROXY_ETC_DIR}/caddy.json`;
/** Caddy's admin API: inside the container only, never published. */
export const ADMIN_ADDRESS = "localhost:2019";

/**
 * Uploads an ERP user may make through the proxy (attachments, imports): Odoo refuses
 * larger requests itself well before this; the cap only stops abuse at the edge.
 */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024 * 1024;
/** A year, as browsers and the HSTS preload list expect. Not includeSubDomains: the customer's other hosts are theirs. */
const HSTS = "max-age=31536000";
const HOSTNAME = new RegExp(HOSTNAME_PATTERN);

export function renderCaddyConfig(input: CaddyConfigInput): string {
  const routes = [...input.routes].sort((a, b) => a.environmentId.localeCompare(b.environmentId));
  const seen = new Set<string>();
  for (const route of routes) {
    for (const name of route.names) {
      // The protocol checks names too; checked here because they land in the proxy's matchers.
      if (!HOSTNAME.test(name)) throw new Error(`"${name}" is not a valid host name`);
      if (seen.has(name)) throw new Error(`${name} is routed twice`);
      seen.add(name);
    }
  }
  const allNames = routes.flatMap((r) => r.names);
  const uncertified = allNames.filter((n) => !input.certify.has(n));
  const certified = allNames.filter((n) => input.certify.has(n));

  const config = {
    admin: { listen: ADMIN_ADDRESS },
    logging: { logs: { default: { level: "INFO", encoder: { format: "json" } } } },
    storage: { module: "file_system", root: `${PROXY_DATA_DIR}/caddy` },
    apps: {
      http: {
        http_port: 80,
        https_port: 443,
        servers: {
          berth_https: {
            listen: [":443"],
            read_header_timeout: "30s",
            idle_timeout: "5m",
            routes: [...routes.map(httpsRoute), notFound()],
            // Redirects are the HTTP server's routes below, so that names waiting for DNS get a page instead.
            automatic_https: { disable_redirects: true, ...(uncertified.length > 0 ? { skip: uncertified } : {}) },
          },
          berth_http: {
            listen: [":80"],
            read_header_timeout: "30s",
            routes: [
              ...(certified.length > 0 ? [redirectToHttps(certified)] : []),
              ...(uncertified.length > 0 ? [waitingForDns(uncertified)] : []),
              notFound(),
            ],
          },
        },
      },
      tls: {
        automation: {
          policies: [
            {
              ...(certified.length > 0 ? { subjects: certified } : {}),
              issuers: [acmeIssuer(input.acme)],
            },
          ],
        },
      },
    },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

function acmeIssuer(acme: AcmeSettings) {
  return {
    module: "acme",
    ...(acme.ca === null ? {} : { ca: acme.ca }),
    ...(acme.email === null ? {} : { email: acme.email }),
    ...(acme.caRootFile === null ? {} : { trusted_roots_pem_files: [acme.caRootFile] }),
    // HTTP-01 on port 80 only: TLS-ALPN-01 would need the ACME server to reach 443 first.
    challenges: { "tls-alpn": { disabled: true } },
  };
}

function httpsRoute(route: RouteSpec) {
  const handle = route.mode === "maintenance" ? maintenance(route) : serving(route);
  return { match: [{ host: route.names }], handle: [{ handler: "subroute", routes: handle }], terminal: true };
}

function serving(route: RouteSpec) {
  const headers = { handler: "headers", response: { set: { "Strict-Transport-Security": [HSTS] } } };
  const body = { handler: "request_body", max_size: MAX_REQUEST_BODY_BYTES };
  const routes: object[] = [{ handle: [headers, body] }];
  if (route.gevent) {
    routes.push({
      match: [{ path: ["/websocket", "/websocket/*", "/longpolling/*"] }],
      handle: [proxyTo(route.upstream, GEVENT_PORT, true)],
      terminal: true,
    });
  }
  routes.push({ handle: [proxyTo(route.upstream, ERP_PORT, false)] });
  return routes;
}

function proxyTo(host: string, port: number, streaming: boolean) {
  return {
    handler: "reverse_proxy",
    upstreams: [{ dial: `${host}:${port}` }],
    // X-Forwarded-For/-Proto/-Host are set by Caddy from the connection (clients' own are
    // dropped); Odoo trusts them with proxy_mode. No response deadline: Odoo's own
    // limit_time_real ends a request that runs too long.
    transport: { protocol: "http", dial_timeout: "5s" },
    ...(streaming ? { flush_interval: -1 } : {}),
  };
}

function maintenance(route: RouteSpec) {
  const name = route.names[0] ?? "";
  return [
    {
      handle: [
        {
          handler: "static_response",
          status_code: 503,
          headers: { "Content-Type": ["text/html; charset=utf-8"], "Retry-After": ["300"], "Cache-Control": ["no-store"] },
          body: page(`${name} is stopped for maintenance`, "The ERP at this address is stopped. It will be back when its owner starts it again."),
        },
      ],
    },
  ];
}

function redirectToHttps(names: string[]) {
  return {
    match: [{ host: names }],
    handle: [
      {
        handler: "static_response",
        status_code: 308,
        headers: { Location: ["https://{http.request.host}{http.request.uri}"] },
      },
    ],
    terminal: true,
  };
}

function waitingForDns(names: string[]) {
  return {
    match: [{ host: names }],
    handle: [
      {
        handler: "static_response",
        status_code: 503,
        headers: { "Content-Type": ["text/html; charset=utf-8"], "Retry-After": ["300"], "Cache-Control": ["no-store"] },
        body: page(
          "HTTPS is not set up here yet",
          "This address does not resolve to this server yet, so no certificate was requested for it. Once its DNS record points here, the certificate is requested within minutes.",
        ),
      },
    ],
    terminal: true,
  };
}

function notFound() {
  return {
    handle: [
      {
        handler: "static_response",
        status_code: 404,
        headers: { "Content-Type": ["text/plain; charset=utf-8"] },
        body: "No site is configured at this address.\n",
      },
    ],
  };
}

function page(title: string, text: string): string {
  const escape = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${escape(title)}</title></head><body style="font-family:sans-serif;max-width:40em;margin:4em auto;padding:0 1em"><h1>${escape(title)}</h1><p>${escape(text)}</p></body></html>\n`;
}
