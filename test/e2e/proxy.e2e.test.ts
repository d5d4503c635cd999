// An ERP reachable at its address, end to end: the control plane (BERTH_BASE_DOMAIN, the
// proxy settings pointing at Pebble), a real agent process and the real Docker engine. A new
// environment gets a generated HTTPS address; a deploy through the platform API brings the
// server's Caddy up with a certificate from Pebble and the control plane shows the
// certificate, the DNS answer and the proxy; a domain set through the API moves the route
// and the certificate at once, without a deploy; stop shows the maintenance page; the agent
// restarted keeps everything serving.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import { freePort, get, startAcmeWorld, type AcmeWorld } from "../../apps/agent/src/proxy/acme-world.test-helpers.ts";
import { isTerminal } from "../../apps/control-plane/src/modules/deployments/operations/deployment-state.ts";
import type { AgentProcess } from "../support/agent-process.ts";
import type { TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { removeEnvironmentObjects, startShop, TEST_PROXY } from "../support/real-agent.ts";
import { waitUntil } from "../support/wait.ts";

let world: AcmeWorld;
let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let admin: Person;
let projectId: string;
let envId: string;
let root = "";
let http = 0;
let https = 0;
let agentEnv: Record<string, string> = {};

const BASE = "apps.berth.test";

beforeAll(async () => {
  [http, https] = await Promise.all([freePort(), freePort()]);
  world = await startAcmeWorld({ httpPort: http });
  root = await world.issuingRoot();
  agentEnv = {
    BERTH_PROXY_HTTP_PORT: String(http),
    BERTH_PROXY_HTTPS_PORT: String(https),
    BERTH_DNS_SERVERS: world.dnsServer,
    BERTH_CERTIFICATE_WAIT: "100",
  };
  ({ cp, d, agent, projectId, envId } = await startShop("Proxy shop", {
    cp: { baseDomain: BASE, proxy: { ...TEST_PROXY, acme_ca: world.directory, acme_ca_root: world.listenerCaPem, acme_email: "ops@berth.test" } },
    agentEnv,
  }));
  admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId });
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  await removeEnvironmentObjects([envId]);
  await world?.close();
}, 120_000);

function until(what: string, check: () => Promise<boolean>, timeoutMs = 240_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => agent.output.slice(-3000) });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function environment(): Promise<any> {
  const res = await admin.api.get(`/organizations/${d.organization_id}/projects`);
  expect(res.status).toBe(200);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const project = (res.body.projects ?? res.body.data ?? res.body).find((p: any) => p.id === projectId);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return project.environments.find((e: any) => e.id === envId);
}

/** Waits for the operation to end; it must have succeeded. */
async function finished(id: string): Promise<void> {
  let record = { status: "pending", error_message: null as string | null };
  await until(`operation ${id} to finish`, async () => {
    record = (await admin.api.get(`/deployments/${id}`)).body;
    return isTerminal(record.status);
  });
  expect(record.status, record.error_message ?? "").toBe("success");
}

async function deployed(): Promise<void> {
  const res = await admin.api.post("/deployments", { project_id: projectId, environment_id: envId, git_branch: "main" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  await finished(res.body.id as string);
}

/** The environment's operations, for a failure message. */
async function operations(): Promise<string> {
  const { rows } = await cp.database.pool.query("select id, kind, status, trigger, created_at from deployments where environment_id = $1 order by created_at", [envId]);
  return JSON.stringify(rows);
}

/** Status of a plain HTTP GET to the proxy's port 80 with this Host. */
function plainStatus(host: string, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port: http, path, headers: { host }, agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on("error", reject);
    request.end();
  });
}

const overHttps = (host: string, path: string) => get(`https://${host}:${https}${path}`, root, { host: "127.0.0.1" });

let generated = "";

it("gives a new environment a generated HTTPS address under the base domain, served after its first deploy", async () => {
  const env = await environment();
  expect(env.url).toMatch(new RegExp(`^https://production-[0-9a-f]{8}\\.${BASE.replaceAll(".", "\\.")}$`));
  generated = new URL(env.url).hostname;
  await world.setA(generated, ["127.0.0.1"]);

  await deployed();
  const health = await overHttps(generated, "/web/health");
  expect(health.status).toBe(200);
  expect(health.headers["strict-transport-security"]).toBe("max-age=31536000");

  // The agent's proxy.state reached the control plane: certificate, DNS and the server's proxy.
  await until("the certificate to show as valid", async () => (await environment()).certificate?.status === "valid", 30_000);
  const shown = await environment();
  expect(shown.certificate).toMatchObject({ status: "valid", not_after: expect.stringMatching(/^\d{4}-/), error: null });
  expect(shown.dns).toMatchObject({ status: "ok", expected: ["127.0.0.1"], resolved: ["127.0.0.1"] });
  const servers = (await admin.api.get(`/organizations/${d.organization_id}/servers`)).body;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const server = (servers.servers ?? servers.data ?? servers).find((s: any) => s.id === d.server_id);
  expect(server.proxy).toMatchObject({ running: true, image: TEST_PROXY.image, public_addresses: ["127.0.0.1"], error: null });
}, 300_000);

it("moves the route and the certificate to a domain set through the API, without a deploy", async () => {
  await world.setA("erp.shop.berth.test", ["127.0.0.1"]);
  const res = await admin.api.patch(`/projects/${projectId}/environments/${envId}`, { domain: "ERP.shop.berth.test" });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toMatchObject({ domain: "erp.shop.berth.test", url: "https://erp.shop.berth.test" });

  // The server's proxy is told at once (a signed route command): no deploy.
  await until("the new name served over HTTPS", async () => (await overHttps("erp.shop.berth.test", "/web/health").catch(() => ({ status: 0 }))).status === 200, 90_000);
  // The generated name is routed no more: no certificate for it, and plain HTTP finds no site.
  await expect(overHttps(generated, "/web/health")).rejects.toThrow(/alert/);
  expect(await plainStatus(generated, "/web/health")).toBe(404);
  await until("the new certificate to show", async () => {
    const env = await environment();
    return env.certificate?.status === "valid" && env.dns?.resolved?.[0] === "127.0.0.1";
  }, 30_000);
}, 300_000);

it("shows the maintenance page while stopped, and serves again once started", async () => {
  const stop = await admin.api.post(`/environments/${envId}/actions/stop`, {});
  expect(stop.status, `${JSON.stringify(stop.body)}; operations: ${await operations()}`).toBe(202);
  await finished(stop.body.id as string);
  const page = await overHttps("erp.shop.berth.test", "/web");
  expect(page.status).toBe(503);
  expect(page.body).toContain("stopped for maintenance");

  const start = await admin.api.post(`/environments/${envId}/actions/start`, {});
  expect(start.status, `${JSON.stringify(start.body)}; operations: ${await operations()}`).toBe(202);
  await finished(start.body.id as string);
  expect((await overHttps("erp.shop.berth.test", "/web/health")).status).toBe(200);
}, 300_000);

it("keeps serving when the agent restarts, and the restarted agent reports its proxy", async () => {
  await agent.stop("SIGTERM");
  expect((await overHttps("erp.shop.berth.test", "/web/health")).status).toBe(200);
  await cp.database.pool.query("update servers set proxy = null where id = $1", [d.server_id]);
  agent.start(agentEnv);
  await until("agent online again", async () => cp.app.gateway.isConnected(d.server_id), 60_000);
  // Its first check after starting reports the proxy again.
  await until("the proxy reported again", async () => {
    const { rows } = await cp.database.pool.query<{ proxy: { running?: boolean } | null }>("select proxy from servers where id = $1", [d.server_id]);
    return rows[0]?.proxy?.running === true;
  }, 60_000);
  expect((await overHttps("erp.shop.berth.test", "/web/health")).status).toBe(200);
}, 180_000);
