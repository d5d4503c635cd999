// The Traefik file: the router Traefik's file provider expects, and nothing injectable.
import { describe, expect, it } from "vitest";
import { renderTraefikConfig } from "./traefik-config.ts";

const base = { environmentId: "e9d8c7b6-a5f4-4e3d-9c2b-1a0f9e8d7c6b", domain: "erp.example.com", containerName: "berth-e9-erp" };

describe("renderTraefikConfig", () => {
  it("routes the domain over TLS (letsencrypt) to the container's port 8069", () => {
    expect(renderTraefikConfig({ ...base, workers: 0 })).toBe(
      [
        `# Written by the Berth agent for environment ${base.environmentId}; rewritten on every deploy.`,
        "http:",
        "  routers:",
        `    berth-${base.environmentId}:`,
        '      rule: "Host(`erp.example.com`)"',
        "      entryPoints:",
        "        - websecure",
        `      service: berth-${base.environmentId}`,
        "      tls:",
        "        certResolver: letsencrypt",
        "  services:",
        `    berth-${base.environmentId}:`,
        "      loadBalancer:",
        "        passHostHeader: true",
        "        servers:",
        '          - url: "http://berth-e9-erp:8069"',
        "",
      ].join("\n"),
    );
  });

  it("sends /websocket to the gevent port when the ERP runs workers", () => {
    const yaml = renderTraefikConfig({ ...base, workers: 2 });
    expect(yaml).toContain('rule: "Host(`erp.example.com`) && PathPrefix(`/websocket`)"');
    expect(yaml).toContain('- url: "http://berth-e9-erp:8072"');
  });

  it("refuses a domain that is not a host name", () => {
    expect(() => renderTraefikConfig({ ...base, domain: "a.com`) || Host(`b.com", workers: 0 })).toThrow(/not a valid host name/);
  });
});
