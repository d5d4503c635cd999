// The reverse proxy with real parts: the agent's handlers on the real Docker engine start
// Caddy (Debian's, as berth-test/caddy:2), which gets certificates from Pebble over HTTP-01
// for names Pebble's DNS points at this machine; HTTPS requests verified against Pebble's
// root reach the ERP stand-in. Two environments share the proxy; one is moved, stopped,
// started and destroyed while the other keeps serving. Needs `bash .ci/docker-setup.sh`.
import { randomUUID, X509Certificate } from "node:crypto";
import { request as httpRequest } from "node:http";
import type { LookupFunction } from "node:net";
import { connect as tlsConnect } from "node:tls";
import Dockerode from "dockerode";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DOCKER_SOCKET } from "../agent/agent.test-helpers.ts";
import { freePort, get, startAcmeWorld, type AcmeWorld } from "../proxy/acme-world.test-helpers.ts";
import { createReverseProxy } from "../proxy/reverse-proxy.ts";
import {
  createExecutorHarness,
  deployParams,
  finishSuite,
  PROXY_IMAGE,
  requireTestImages,
  type ExecutorHarness,
  type Run,
} from "./executor.test-helpers.ts";

const SUITE = "executor-proxy";
const raw = new Dockerode({ socketPath: DOCKER_SOCKET });
const UPGRADED_IMAGE = "berth-test/caddy:2-upgrade";

function ok(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}\n${run.logs.map((l) => l.message).join("\n")}`);
  return run.outcome.result;
}

/** HTTP/1.1 to the proxy's port 80 with the given Host. */
function plainGet(port: number, host: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path, headers: { host }, agent: false }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end();
  });
}

/** The certificate the proxy serves for `name`, unverified: to compare serial numbers. */
function servedSerial(port: number, name: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: "127.0.0.1", port, servername: name, rejectUnauthorized: false }, () => {
      const der = socket.getPeerCertificate().raw;
      socket.destroy();
      resolve(new X509Certificate(der).serialNumber);
    });
    socket.on("error", reject);
  });
}

/** Every name to 127.0.0.1, where the proxy listens (Node asks for all addresses when it may try several). */
const toLoopback = ((_hostname: string, options: { all?: boolean }, callback: (error: null, address: unknown, family?: number) => void) => {
  if (options.all) callback(null, [{ address: "127.0.0.1", family: 4 }]);
  else callback(null, "127.0.0.1", 4);
}) as unknown as LookupFunction;

describe("the reverse proxy with Caddy and Pebble", () => {
  let world: AcmeWorld;
  let h: ExecutorHarness;
  let root = "";
  let http = 0;
  let https = 0;
  const shop = randomUUID();
  const blog = randomUUID();
  const https$ = (name: string, path: string) => get(`https://${name}:${https}${path}`, root, { host: "127.0.0.1" });
  /**
   * A newly requested certificate on a loaded machine: once, Caddy's first ACME attempt (and
   * its retry a minute later) failed and the deploy's wait ran out; Caddy keeps trying (then
   * after 2 more minutes), so the name is asked again until it serves.
   */
  const servedEventually = async (name: string, path: string) => {
    const deadline = Date.now() + 200_000;
    for (;;) {
      const answer = await https$(name, path).catch((error: unknown) => ({ status: 0, error }));
      if (answer.status === 200 || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  };

  beforeAll(async () => {
    [http, https] = await Promise.all([freePort(), freePort()]);
    world = await startAcmeWorld({ httpPort: http });
    for (const name of ["shop.berth.test", "www.shop.berth.test", "moved.berth.test", "blog.berth.test"]) await world.setA(name, ["127.0.0.1"]);
    await world.setA("elsewhere.berth.test", ["203.0.113.9"]);
    // Past one of Caddy's retries: a first ACME attempt that fails (once seen on a loaded machine) is retried after 60 s.
    h = createExecutorHarness(
      SUITE,
      { healthTimeoutMs: 30_000, healthIntervalMs: 300 },
      { httpPort: String(http), httpsPort: String(https), dnsServers: [world.dnsServer], certificateWaitMs: 100_000 },
    );
    await requireTestImages(h.docker);
    root = await world.issuingRoot();
    await raw.getImage(PROXY_IMAGE).tag({ repo: "berth-test/caddy", tag: "2-upgrade" });
  }, 60_000);

  afterAll(async () => {
    await finishSuite(SUITE, h);
    await world?.close();
    await raw.getImage(UPGRADED_IMAGE).remove().catch(() => undefined);
  }, 120_000);

  const proxySettings = (image = PROXY_IMAGE) => ({ image, acme_ca: world.directory, acme_ca_root: world.listenerCaPem, acme_email: "ops@berth.test" });

  // The blog's deploy comes first so that the proxy's ACME account is made by a single order.
  // Caddy before 2.8 (Debian's 2.6, the test image) registers one account per concurrent first
  // order and can store one account's key beside the other's id; every later order on that
  // proxy is then refused ("JWS verification error"). certmagic locks the registration since
  // Caddy 2.8, which BERTH_PROXY_IMAGE requires.
  it("requests no certificate for a name that points elsewhere, and says which record to create", async () => {
    const run = await h.run("deploy", deployParams(blog, { domain: "blog.berth.test", aliases: ["elsewhere.berth.test"], proxy: proxySettings() }));
    ok(run);
    expect(run.logs).toContainEqual(
      expect.objectContaining({
        step: "verifying_dns",
        level: "warning",
        message: expect.stringContaining("elsewhere.berth.test resolves to 203.0.113.9, not to this server: create elsewhere.berth.test A 127.0.0.1"),
      }),
    );
    expect((await servedEventually("blog.berth.test", "/web/health")).status).toBe(200);
    const waiting = await plainGet(http, "elsewhere.berth.test", "/");
    expect(waiting.status).toBe(503);
    expect(waiting.body).toContain("does not resolve to this server yet");

    const state = await h.proxy.report(h.docker);
    expect(state).toMatchObject({ running: true, image: PROXY_IMAGE, public_addresses: ["127.0.0.1"], error: null });
    const blogRoute = state.routes.find((r) => r.environment_id === blog);
    expect(blogRoute?.domains.map((d) => [d.name, d.dns.status, d.certificate.status])).toEqual([
      ["blog.berth.test", "ok", "valid"],
      ["elsewhere.berth.test", "mismatch", "not_requested"],
    ]);
    expect(blogRoute?.domains[0]?.certificate.issuer).toMatch(/Pebble/);
  }, 420_000);

  it("deploys with a domain and an alias: Pebble issues both certificates, HTTPS reaches the ERP, HTTP redirects", async () => {
    const run = await h.run(
      "deploy",
      deployParams(shop, {
        domain: "shop.berth.test",
        aliases: ["www.shop.berth.test"],
        resources: { cpu_cores: 1, ram_mb: 512, disk_gb: 5, workers: 2 },
        proxy: proxySettings(),
      }),
    );
    expect(ok(run).urls).toEqual(["https://shop.berth.test", "https://www.shop.berth.test"]);
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "configuring_dns", message: expect.stringContaining("shop.berth.test A 127.0.0.1") }));
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "verifying_dns", message: "shop.berth.test resolves to 127.0.0.1: this server" }));
    expect(run.logs).toContainEqual(expect.objectContaining({ step: "configuring_traefik", message: expect.stringMatching(/^Certificate for shop\.berth\.test valid until \d{4}-/) }));

    for (const name of ["shop.berth.test", "www.shop.berth.test"]) {
      const health = await https$(name, "/web/health");
      expect(health.status).toBe(200);
      expect(health.headers["strict-transport-security"]).toBe("max-age=31536000");
    }
    // What reached the ERP: port 8069, with the proxy's forwarded headers (odoo.conf has proxy_mode).
    const seen = JSON.parse((await https$("shop.berth.test", "/berth/request")).body) as Record<string, unknown>;
    expect(seen).toMatchObject({ port: 8069, host: `shop.berth.test:${https}`, forwarded_proto: "https" });

    const redirect = await plainGet(http, "shop.berth.test", "/web/login?redirect=%2Fodoo");
    expect(redirect.status).toBe(308);
    expect(redirect.headers.location).toBe("https://shop.berth.test/web/login?redirect=%2Fodoo");
  }, 180_000);

  it("sends /websocket to the gevent port 8072 when the ERP runs workers", async () => {
    const socket = new WebSocket(`wss://shop.berth.test:${https}/websocket`, { ca: root, lookup: toLoopback });
    const first = await new Promise<string>((resolve, reject) => {
      socket.once("message", (data: Buffer) => resolve(data.toString("utf8")));
      socket.once("error", reject);
    });
    expect(JSON.parse(first)).toMatchObject({ port: 8072, path: "/websocket", forwarded_proto: "https" });
    const echo = new Promise<string>((resolve) => socket.once("message", (data: Buffer) => resolve(data.toString("utf8"))));
    socket.send("ping through the proxy");
    expect(await echo).toBe("ping through the proxy");
    socket.close();
  }, 30_000);

  it("moves the route and the certificate when the domain changes", async () => {
    ok(await h.run("redeploy", deployParams(shop, { domain: "moved.berth.test", resources: { cpu_cores: 1, ram_mb: 512, disk_gb: 5, workers: 2 }, proxy: proxySettings() })));
    expect((await servedEventually("moved.berth.test", "/web/health")).status).toBe(200);
    expect((await plainGet(http, "shop.berth.test", "/")).status).toBe(404);
    expect((await plainGet(http, "www.shop.berth.test", "/")).status).toBe(404);
    expect((await https$("blog.berth.test", "/web/health")).status).toBe(200);
  }, 420_000);

  it("shows a maintenance page while the environment is stopped, and serves it again once started", async () => {
    ok(await h.run("stop", { deployment_id: randomUUID(), environment_id: shop }));
    const page = await https$("moved.berth.test", "/web");
    expect(page.status).toBe(503);
    expect(page.headers["retry-after"]).toBe("300");
    expect(page.body).toContain("moved.berth.test is stopped for maintenance");
    expect((await https$("blog.berth.test", "/web/health")).status).toBe(200);

    ok(await h.run("start", { deployment_id: randomUUID(), environment_id: shop }));
    expect((await https$("moved.berth.test", "/web/health")).status).toBe(200);
  }, 120_000);

  it("keeps routes and certificates when the proxy restarts, and an agent starting over adopts the running proxy", async () => {
    const serial = await servedSerial(https, "blog.berth.test");
    await raw.getContainer(h.proxy.host.name).restart({ t: 5 });
    let health = 0;
    for (let i = 0; i < 50 && health !== 200; i++) {
      health = await https$("blog.berth.test", "/web/health").then((r) => r.status, () => 0);
      if (health !== 200) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(health).toBe(200);
    expect(await servedSerial(https, "blog.berth.test")).toBe(serial);

    // A new agent process on the same state directory: same routes, same container.
    const before = await raw.getContainer(h.proxy.host.name).inspect();
    const again = createReverseProxy({ stateDir: h.stateDir, host: h.proxy.host, labels: h.labels });
    const state = await again.report(h.docker);
    expect(state.routes.map((r) => r.environment_id).sort()).toEqual([shop, blog].sort());
    expect(state.running).toBe(true);
    ok(await h.run("redeploy", deployParams(blog, { domain: "blog.berth.test", aliases: ["elsewhere.berth.test"], proxy: proxySettings() })));
    expect((await raw.getContainer(h.proxy.host.name).inspect()).Id).toBe(before.Id);
  }, 120_000);

  it("upgrades the proxy to a new image, keeping its certificates", async () => {
    const serial = await servedSerial(https, "moved.berth.test");
    const before = await raw.getContainer(h.proxy.host.name).inspect();
    ok(await h.run("redeploy", deployParams(blog, { domain: "blog.berth.test", aliases: ["elsewhere.berth.test"], proxy: proxySettings(UPGRADED_IMAGE) })));
    const after = await raw.getContainer(h.proxy.host.name).inspect();
    expect(after.Id).not.toBe(before.Id);
    expect(after.Config.Image).toBe(UPGRADED_IMAGE);
    expect((await https$("moved.berth.test", "/web/health")).status).toBe(200);
    expect(await servedSerial(https, "moved.berth.test")).toBe(serial);
  }, 120_000);

  it("destroying one environment removes its routes only", async () => {
    ok(await h.run("destroy", { deployment_id: randomUUID(), environment_id: shop, delete_data: true }));
    expect((await plainGet(http, "moved.berth.test", "/")).status).toBe(404);
    expect((await https$("blog.berth.test", "/web/health")).status).toBe(200);
    const proxy = await raw.getContainer(h.proxy.host.name).inspect();
    expect(Object.keys(proxy.NetworkSettings.Networks).sort()).toEqual([h.proxy.host.name, `berth-${blog}`].sort());
    expect((await h.proxy.report(h.docker)).routes.map((r) => r.environment_id)).toEqual([blog]);
  }, 120_000);
});
