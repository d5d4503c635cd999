// The proxy's configuration as Caddy reads it: what each route does, which names get
// certificates, and names that must never reach a matcher.
import { describe, expect, it } from "vitest";
import { renderCaddyConfig, type CaddyConfigInput, type RouteSpec } from "./caddy-config.ts";

const route = (overrides: Partial<RouteSpec> = {}): RouteSpec => ({
  environmentId: "5b0c1c56-8b1a-4a4e-9a43-0d0f3c8d9f10",
  names: ["erp.acme.example", "www.acme.example"],
  upstream: "berth-5b0c1c56-8b1a-4a4e-9a43-0d0f3c8d9f10-erp",
  gevent: true,
  mode: "serving",
  ...overrides,
});

const render = (input: Partial<CaddyConfigInput> = {}) =>
  JSON.parse(
    renderCaddyConfig({
      routes: [route()],
      certify: new Set(["erp.acme.example", "www.acme.example"]),
      acme: { ca: null, caRootFile: null, email: null },
      ...input,
    }),
  ) as { admin: { listen: string }; apps: { http: { servers: Record<string, { routes: unknown[]; automatic_https?: { skip?: string[] } }> }; tls: { automation: { policies: Record<string, unknown>[] } } } };

describe("the proxy's Caddy configuration", () => {
  it("keeps the admin API inside the container", () => {
    expect(render().admin.listen).toBe("localhost:2019");
  });

  it("sends /websocket and /longpolling to 8072 with workers, everything else to 8069, with HSTS", () => {
    const https = JSON.stringify(render().apps.http.servers.berth_https);
    expect(https).toContain('"dial":"berth-5b0c1c56-8b1a-4a4e-9a43-0d0f3c8d9f10-erp:8072"');
    expect(https).toContain('"path":["/websocket","/websocket/*","/longpolling/*"]');
    expect(https).toContain('"dial":"berth-5b0c1c56-8b1a-4a4e-9a43-0d0f3c8d9f10-erp:8069"');
    expect(https).toContain('"Strict-Transport-Security":["max-age=31536000"]');
    const threaded = JSON.stringify(render({ routes: [route({ gevent: false })] }).apps.http.servers.berth_https);
    expect(threaded).not.toContain(":8072");
  });

  it("serves a 503 maintenance page instead of the ERP while stopped", () => {
    const https = JSON.stringify(render({ routes: [route({ mode: "maintenance" })] }).apps.http.servers.berth_https);
    expect(https).not.toContain(":8069");
    expect(https).toContain('"status_code":503');
    expect(https).toContain("erp.acme.example is stopped for maintenance");
  });

  it("certifies only the names that resolve here; the others get a page on HTTP and no ACME order", () => {
    const config = render({ certify: new Set(["erp.acme.example"]) });
    expect(config.apps.http.servers.berth_https?.automatic_https?.skip).toEqual(["www.acme.example"]);
    expect(config.apps.tls.automation.policies[0]?.subjects).toEqual(["erp.acme.example"]);
    const http = JSON.stringify(config.apps.http.servers.berth_http);
    expect(http).toMatch(/"host":\["erp\.acme\.example"\]\}\],"handle":\[\{"handler":"static_response","status_code":308/);
    expect(http).toContain("does not resolve to this server yet");
  });

  it("takes the administrator's ACME directory, its CA root and contact", () => {
    const issuer = render({ acme: { ca: "https://acme.internal/dir", caRootFile: "/etc/berth-proxy/acme-ca-root.pem", email: "ops@acme.example" } }).apps.tls
      .automation.policies[0]?.issuers;
    expect(issuer).toEqual([
      {
        module: "acme",
        ca: "https://acme.internal/dir",
        email: "ops@acme.example",
        trusted_roots_pem_files: ["/etc/berth-proxy/acme-ca-root.pem"],
        challenges: { "tls-alpn": { disabled: true } },
      },
    ]);
  });

  it("is the same document for the same routes in any order", () => {
    const other = route({ environmentId: "0e7b6c3a-1d2f-4c1e-8f00-1a2b3c4d5e6f", names: ["b.acme.example"] });
    const certify = new Set(["erp.acme.example", "www.acme.example", "b.acme.example"]);
    const acme = { ca: null, caRootFile: null, email: null };
    expect(renderCaddyConfig({ routes: [route(), other], certify, acme })).toBe(renderCaddyConfig({ routes: [other, route()], certify, acme }));
  });

  it.each([
    ["a matcher-breaking name", ["erp.acme.example\",\"*"]],
    ["a wildcard", ["*.acme.example"]],
    ["an uppercase name", ["ERP.acme.example"]],
  ])("refuses %s", (_what, names) => {
    expect(() => render({ routes: [route({ names })] })).toThrow("is not a valid host name");
  });

  it("refuses a name routed to two environments", () => {
    const twin = route({ environmentId: "0e7b6c3a-1d2f-4c1e-8f00-1a2b3c4d5e6f", names: ["erp.acme.example"] });
    expect(() => render({ routes: [route(), twin] })).toThrow("erp.acme.example is routed twice");
  });
});
