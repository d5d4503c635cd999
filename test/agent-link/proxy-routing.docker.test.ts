// The reverse proxy through the real agent link: a deploy command carries the host name the
// environment is served at (its domain, else its generated name), its aliases and the
// installation's proxy settings; the agent's proxy.state report becomes the server's proxy,
// each environment's certificate and DNS state in both APIs, and live events; a report
// naming another server's environment changes nothing of it. A deploy command also carries
// the environment's variables, and a rollback those of its target deployment.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProxySettings, RoutedDomain, SignedCommand } from "@berth/protocol";
import { useTestImages } from "../support/real-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { proveClaims, startTestDns, type TestDns } from "../support/dns-server.ts";
import { publicClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { SseStream, urlOf } from "../support/sse.ts";

const BASE = "envs.berth.test";
const PROXY: ProxySettings = {
  image: "registry.example.com/caddy:2.8",
  acme_ca: "https://acme.example.com/directory",
  acme_ca_root: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
  acme_email: "ops@example.com",
};

let cp: TestControlPlane;
let base: string;
let dns: TestDns;
const cleanup: (() => void)[] = [];

beforeAll(async () => {
  dns = await startTestDns();
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, baseDomain: BASE, proxy: PROXY, dnsServers: [dns.server] });
  base = urlOf(cp);
  await useTestImages(cp);
}, 60_000);
afterAll(async () => {
  for (const c of cleanup) c();
  await cp?.close();
  await dns?.close();
});

async function withAgent(onCommand?: (cmd: SignedCommand, agent: SimAgent) => void) {
  const out = await demoOrganizationWithAgent(cp, base, onCommand);
  cleanup.push(out.stop);
  return out;
}

const hex8 = (id: string) => id.replace(/-/g, "").slice(0, 8);
const routed = (name: string, over: { dns?: Partial<RoutedDomain["dns"]>; certificate?: Partial<RoutedDomain["certificate"]> } = {}): RoutedDomain => ({
  name,
  dns: { status: "ok", resolved: ["203.0.113.5"], expected: ["203.0.113.5"], ...over.dns },
  certificate: { status: "valid", not_after: "2027-02-01T00:00:00.000Z", issuer: "Pebble Intermediate CA", error: null, ...over.certificate },
});

async function waitForCommand(received: SignedCommand[], n: number) {
  const deadline = Date.now() + 10_000;
  while (received.length < n) {
    if (Date.now() > deadline) throw new Error(`expected ${n} commands, got ${received.length}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return received[n - 1]!;
}

describe("a deploy command", () => {
  it("carries the domain and aliases, or the generated name, and the proxy settings", async () => {
    const received: SignedCommand[] = [];
    const { d } = await withAgent((cmd) => received.push(cmd));
    const api = publicClient(cp.app, d.api_keys.org_rw);

    expect((await api.patch(`/environments/${d.environments.running}`, { aliases: ["WWW.Shop-A.example.com"] })).status).toBe(200);
    const domain = ((await api.get(`/environments/${d.environments.running}`)).body as { domain: string }).domain;
    // A deployed environment's new names reach its server's proxy at once.
    const route = await waitForCommand(received, 1);
    expect(route.type).toBe("route");
    expect(route.params).toEqual({ environment_id: d.environments.running, domain, aliases: ["www.shop-a.example.com"], proxy: PROXY });
    expect((await api.post(`/environments/${d.environments.running}/deploy`)).status).toBe(202);
    const first = await waitForCommand(received, 2);
    expect(first.type).toBe("deploy");
    expect(first.params).toMatchObject({ environment_id: d.environments.running, domain, aliases: ["www.shop-a.example.com"], proxy: PROXY });

    // Without a domain: the name Berth generated, lowercase.
    expect((await api.post(`/environments/${d.environments.stopped}/start`)).status).toBe(202); // not a deploy: no routing parameters
    const start = await waitForCommand(received, 3);
    expect(start.params).not.toHaveProperty("domain");
    await cp.database.pool.query("update deployments set status = 'success', completed_at = now() where environment_id = $1 and status not in ('success', 'failed')", [d.environments.stopped]);
    expect((await api.post(`/environments/${d.environments.stopped}/deploy`)).status).toBe(202);
    const second = await waitForCommand(received, 4);
    expect(second.params).toMatchObject({ domain: `staging-${hex8(d.environments.stopped)}.${BASE}`, aliases: [], proxy: PROXY });
  });

  it("sends no route for an environment never deployed (its first deploy routes it), nor for names that did not change", async () => {
    const received: SignedCommand[] = [];
    const { d } = await withAgent((cmd) => received.push(cmd));
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const project = (await api.get(`/environments/${d.environments.running}`)).body as { project_id: string };
    const created = await api.post("/environments", { project_id: project.project_id, name: `fresh-${hex8(d.server_id)}` });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect((await api.patch(`/environments/${created.body.id}`, { domain: `fresh-${hex8(d.server_id)}.example.org` })).status).toBe(200);
    // The same names again: nothing to tell.
    const running = (await api.get(`/environments/${d.environments.running}`)).body as { domain: string };
    expect((await api.patch(`/environments/${d.environments.running}`, { domain: running.domain })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(received.map((c) => c.type)).toEqual([]);
  });
});

describe("environment variables", () => {
  it("a deploy command carries the variables; a rollback those of its target", { timeout: 60_000 }, async () => {
    const received: SignedCommand[] = [];
    const { d } = await withAgent((cmd) => received.push(cmd));
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const env = d.environments.running;
    const finish = (id: string) => cp.database.pool.query("update deployments set status = 'success', started_at = now(), completed_at = now() where id = $1", [id]);

    expect((await api.put(`/environments/${env}/variables`, { variables: { TZ: "Europe/Brussels", SMTP_PASSWORD: "first" } })).status).toBe(200);
    const first = await admin.api.post("/deployments", { project_id: d.project_id, environment_id: env, git_branch: "main" });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect((await waitForCommand(received, 1)).params).toMatchObject({ deployment_id: first.body.id, env: { TZ: "Europe/Brussels", SMTP_PASSWORD: "first" } });
    await finish(first.body.id);

    expect((await api.put(`/environments/${env}/variables/SMTP_PASSWORD`, { value: "second" })).status).toBe(200);
    expect((await api.delete(`/environments/${env}/variables/TZ`)).status).toBe(204);
    const second = await admin.api.post("/deployments", { project_id: d.project_id, environment_id: env, git_branch: "main" });
    expect((await waitForCommand(received, 2)).params).toMatchObject({ deployment_id: second.body.id, env: { SMTP_PASSWORD: "second" } });
    expect((await waitForCommand(received, 2)).params.env).not.toHaveProperty("TZ");
    await finish(second.body.id);

    const rollback = await admin.api.post(`/deployments/${first.body.id}/rollback`);
    expect(rollback.status, JSON.stringify(rollback.body)).toBe(200);
    expect((await waitForCommand(received, 3)).params).toMatchObject({ deployment_id: rollback.body.id, env: { TZ: "Europe/Brussels", SMTP_PASSWORD: "first" } });
  });
});

describe("proxy.state", () => {
  it("becomes the server's proxy and its environments' certificate and DNS state, in both APIs and the live stream", async () => {
    const { d, agent } = await withAgent();
    const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
    const stream = await SseStream.open(base, { organization_id: d.organization_id }, { token: owner.token });
    cleanup.push(() => stream.close());
    await stream.until((s) => s.lastId !== null, "the opening id");
    const api = publicClient(cp.app, d.api_keys.org_ro);
    const running = (await api.get(`/environments/${d.environments.running}`)).body as { domain: string };
    const generated = `staging-${hex8(d.environments.stopped)}.${BASE}`;
    // Before any report: no proxy, no route.
    expect((await api.get(`/servers/${d.server_id}`)).body.proxy).toBeNull();

    await agent.sendAcked([
      agent.event({
        kind: "proxy.state",
        running: true,
        image: "caddy:2",
        public_addresses: ["203.0.113.5"],
        error: null,
        routes: [
          {
            environment_id: d.environments.running,
            mode: "serving",
            domains: [
              routed(running.domain, { certificate: { not_after: "2027-03-01T00:00:00.000Z" } }),
              routed(`www.${running.domain}`, { dns: { status: "mismatch", resolved: ["198.51.100.9"] }, certificate: { status: "not_requested", not_after: null, issuer: null } }),
            ],
          },
          { environment_id: d.environments.stopped, mode: "maintenance", domains: [routed(generated, { certificate: { status: "pending", not_after: null, issuer: null } })] },
        ],
      }),
    ]);

    const server = (await api.get(`/servers/${d.server_id}`)).body;
    expect(server.proxy).toEqual({ running: true, image: "caddy:2", public_addresses: ["203.0.113.5"], error: null, checked_at: expect.any(String) });
    const env = (await api.get(`/environments/${d.environments.running}`)).body;
    expect(env.certificate).toEqual({ status: "not_requested", not_after: "2027-03-01T00:00:00.000Z", error: null, checked_at: server.proxy.checked_at });
    expect(env.dns).toEqual({ status: "ok", expected: ["203.0.113.5"], resolved: ["203.0.113.5"] });
    expect((await api.get(`/environments/${d.environments.stopped}`)).body).toMatchObject({ certificate: { status: "pending", not_after: null }, dns: { status: "ok" } });

    // The dashboard's views: the capacity view's server and the project view's environments.
    const servers = (await owner.api.get(`/organizations/${d.organization_id}/servers`)).body.data;
    expect(servers.find((s: { id: string }) => s.id === d.server_id).proxy).toMatchObject({ running: true, public_addresses: ["203.0.113.5"] });
    const envs = (await owner.api.get(`/organizations/${d.organization_id}/projects`)).body.data[0].environments;
    expect(envs.find((e: { id: string }) => e.id === d.environments.stopped)).toMatchObject({ url: `https://${generated}`, certificate: { status: "pending" } });

    await stream.until((s) => s.of("server.proxy").length === 1 && s.of("environment.routing").length === 2, "the proxy and routing events");
    expect(stream.of("server.proxy")[0]!.data).toMatchObject({ server_id: d.server_id, running: true, image: "caddy:2" });
    const routing = stream.of("environment.routing").find((e) => e.data.environment_id === d.environments.running)!;
    expect(routing.data).toMatchObject({ project_id: d.project_id, mode: "serving", certificate: { status: "not_requested" } });

    // The same report again (a periodic check): nothing new to tell.
    const repeat = (routes: unknown[], error: string | null = null) =>
      agent.event({ kind: "proxy.state", running: error === null, image: "caddy:2", public_addresses: ["203.0.113.5"], error, routes });
    const sameRoutes = [
      { environment_id: d.environments.running, mode: "serving", domains: [routed(running.domain, { certificate: { not_after: "2027-03-01T00:00:00.000Z" } }), routed(`www.${running.domain}`, { dns: { status: "mismatch", resolved: ["198.51.100.9"] }, certificate: { status: "not_requested", not_after: null, issuer: null } })] },
      { environment_id: d.environments.stopped, mode: "maintenance", domains: [routed(generated, { certificate: { status: "pending", not_after: null, issuer: null } })] },
    ];
    await agent.sendAcked([repeat(sameRoutes)]);
    // A later report without the stopped environment: it has no route any more; the proxy is down.
    await agent.sendAcked([repeat(sameRoutes.slice(0, 1), "admin API on localhost:2019 refused the connection")]);
    expect((await api.get(`/environments/${d.environments.stopped}`)).body).toMatchObject({ certificate: { status: "none", checked_at: null }, dns: { status: "unchecked" } });
    expect((await api.get(`/servers/${d.server_id}`)).body.proxy).toMatchObject({ running: false, error: "admin API on localhost:2019 refused the connection" });
    await stream.until((s) => s.of("server.proxy").length === 2 && s.of("environment.routing").length === 3, "the second change");
    expect(stream.of("environment.routing")[2]!.data).toMatchObject({ environment_id: d.environments.stopped, mode: null, routing: null, certificate: { status: "none" } });
    await new Promise((r) => setTimeout(r, 300));
    expect(stream.of("server.proxy")).toHaveLength(2);
    expect(stream.of("environment.routing")).toHaveLength(3);
  });

  it("naming another server's environment changes nothing of it", async () => {
    const a = await withAgent();
    const b = await withAgent();
    const apiA = publicClient(cp.app, a.d.api_keys.org_ro);
    const domainA = ((await apiA.get(`/environments/${a.d.environments.running}`)).body as { domain: string }).domain;
    await a.agent.sendAcked([
      a.agent.event({ kind: "proxy.state", running: true, image: "caddy:2", public_addresses: ["192.0.2.1"], error: null, routes: [{ environment_id: a.d.environments.running, mode: "serving", domains: [routed(domainA)] }] }),
    ]);
    const before = (await apiA.get(`/environments/${a.d.environments.running}`)).body;
    expect(before.certificate.status).toBe("valid");

    // B's agent claims A's environment has a broken certificate, and (being the whole set) that it holds no routes of A.
    await b.agent.sendAcked([
      b.agent.event({
        kind: "proxy.state",
        running: true,
        image: "caddy:2",
        public_addresses: ["198.51.100.1"],
        error: null,
        routes: [{ environment_id: a.d.environments.running, mode: "maintenance", domains: [routed(domainA, { certificate: { status: "error", not_after: null, error: "forged" } })] }],
      }),
    ]);
    expect((await apiA.get(`/environments/${a.d.environments.running}`)).body).toEqual(before);
    expect((await apiA.get(`/servers/${a.d.server_id}`)).body.proxy.public_addresses).toEqual(["192.0.2.1"]);
    const { rows } = await cp.database.pool.query("select routing from environments where id = $1", [a.d.environments.running]);
    expect(JSON.stringify(rows[0])).not.toContain("forged");
    // B's own server took its report.
    expect((await publicClient(cp.app, b.d.api_keys.org_ro).get(`/servers/${b.d.server_id}`)).body.proxy.public_addresses).toEqual(["198.51.100.1"]);
  });
});

describe("destroying an environment", () => {
  it("gives its domain and aliases up, for any environment to take", async () => {
    const a = await withAgent((cmd, agent) => {
      if (cmd.type === "destroy") agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: {} })]);
    });
    const b = await withAgent();
    const apiA = publicClient(cp.app, a.d.api_keys.org_rw);
    const apiB = publicClient(cp.app, b.d.api_keys.org_rw);
    const name = `leaving-${hex8(a.d.environments.stopped)}.example.com`;
    expect((await apiA.patch(`/environments/${a.d.environments.stopped}`, { domain: name, aliases: [`www.${name}`] })).status).toBe(200);
    // Held against others once proven (a pending claim blocks no one).
    await proveClaims(dns, apiA, a.d.environments.stopped, [name, `www.${name}`]);
    expect((await apiB.patch(`/environments/${b.d.environments.stopped}`, { aliases: [`www.${name}`] })).status).toBe(409);

    const destroy = await apiA.delete(`/environments/${a.d.environments.stopped}`, { "x-confirm-delete": "true" });
    expect(destroy.status).toBe(202);
    const deadline = Date.now() + 10_000;
    while ((await apiA.get(`/deployments/${destroy.body.task_id}`)).body.status !== "completed") {
      if (Date.now() > deadline) throw new Error("destroy did not complete");
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await apiA.get(`/environments/${a.d.environments.stopped}`)).body).toMatchObject({ is_active: false, domain: null, aliases: [] });
    expect((await apiB.patch(`/environments/${b.d.environments.stopped}`, { domain: name, aliases: [`www.${name}`] })).status).toBe(200);
    // An inactive environment takes no names.
    expect((await apiA.patch(`/environments/${a.d.environments.stopped}`, { domain: `back-${name}` })).body.error).toBe("environment_inactive");
  });
});
