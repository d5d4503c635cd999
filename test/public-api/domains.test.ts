// An environment's domain and aliases, as customers set them through both APIs: stored
// lowercase, checked as host names, unique across the whole installation (whichever
// organisation holds a name), names under the installation's base domain kept for the
// environments Berth names itself, and the URL every environment view shows.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { proveClaims, startTestDns, type TestDns } from "../support/dns-server.ts";
import { expectEnvironment, expectError, freshOrganization } from "./fixtures.ts";

const BASE = "envs.berth.test";
let cp: TestControlPlane;
let dns: TestDns;
beforeAll(async () => {
  dns = await startTestDns();
  cp = await startControlPlane({ baseDomain: BASE, dnsServers: [dns.server] });
});
afterAll(async () => {
  await cp?.close();
  await dns?.close();
});

const unique = () => Math.random().toString(36).slice(2, 10);
const hex8 = (id: string) => id.replace(/-/g, "").slice(0, 8);

describe("PATCH /environments/{id}", () => {
  it("sets, changes and removes the domain and aliases; the URL follows", async () => {
    const { d, rw, ro } = await freshOrganization(cp);
    const env = d.environments.stopped; // "staging", no domain
    const generated = `staging-${hex8(env)}.${BASE}`;
    const before = (await ro.get(`/environments/${env}`)).body;
    expectEnvironment(before);
    expect(before).toMatchObject({ domain: null, aliases: [], url: `https://${generated}`, certificate: { status: "none" }, dns: { status: "unchecked" } });

    const name = `ERP-${unique()}.Example.COM`;
    const set = await rw.patch(`/environments/${env}`, { domain: name, aliases: [`WWW.${name}`] });
    expect(set.status).toBe(200);
    expectEnvironment(set.body);
    expect(set.body).toMatchObject({ domain: name.toLowerCase(), aliases: [`www.${name.toLowerCase()}`], url: `https://${name.toLowerCase()}` });
    expect((await ro.get(`/environments/${env}`)).body).toMatchObject({ domain: name.toLowerCase(), url: `https://${name.toLowerCase()}` });

    const changed = await rw.patch(`/environments/${env}`, { domain: `shop-${unique()}.example.org` });
    expect(changed.status).toBe(200);
    expect(changed.body.aliases).toEqual([`www.${name.toLowerCase()}`]); // omitted: unchanged

    const removed = await rw.patch(`/environments/${env}`, { domain: null, aliases: [] });
    expect(removed.status).toBe(200);
    expect(removed.body).toMatchObject({ domain: null, aliases: [], url: `https://${generated}` });
    // The names it gave up are free again: another environment takes the old one.
    const again = await rw.patch(`/environments/${d.environments.running}`, { domain: name });
    expect(again.status).toBe(200);
  });

  it.each([
    ["a trailing dot", "erp.example.com."],
    ["an IPv4 address", "192.0.2.10"],
    ["an IPv6 address", "2001:db8::10"],
    ["a single label", "intranet"],
    ["a wildcard", "*.example.com"],
    ["an underscore", "erp_1.example.com"],
    ["a URL", "https://erp.example.com"],
  ])("refuses %s as a domain or alias (400 invalid_domain) and changes nothing", async (_what, bad) => {
    const { d, rw, ro } = await freshOrganization(cp);
    const env = d.environments.running;
    const before = (await ro.get(`/environments/${env}`)).body;
    expectError(await rw.patch(`/environments/${env}`, { domain: bad }), 400, "invalid_domain");
    expectError(await rw.patch(`/environments/${env}`, { aliases: [`ok-${unique()}.example.com`, bad] }), 400, "invalid_domain");
    expect((await ro.get(`/environments/${env}`)).body).toEqual(before);
  });

  it("refuses repeated aliases, an alias equal to the domain, more than 10 aliases and an empty change (400 validation_error)", async () => {
    const { d, rw } = await freshOrganization(cp);
    const env = d.environments.running;
    const name = `a-${unique()}.example.com`;
    expectError(await rw.patch(`/environments/${env}`, { domain: name, aliases: [name.toUpperCase()] }), 400, "validation_error");
    expectError(await rw.patch(`/environments/${env}`, { aliases: [`b.${name}`, `B.${name}`] }), 400, "validation_error");
    expectError(await rw.patch(`/environments/${env}`, { aliases: Array.from({ length: 11 }, (_, i) => `n${i}.${name}`) }), 400, "validation_error");
    expectError(await rw.patch(`/environments/${env}`, {}), 400, "validation_error");
    expectError(await rw.patch(`/environments/${env}`, { domain: name, name: "renamed" }), 400, "validation_error");
  });

  it("needs a full-access key of the environment's project", async () => {
    const { d, ro } = await freshOrganization(cp);
    expectError(await ro.patch(`/environments/${d.environments.running}`, { domain: `x-${unique()}.example.com` }), 403, "read_only_key");
    const other = await createDemoOrganization(cp.database.db, cp.app.services);
    const foreign = publicClient(cp.app, other.api_keys.org_rw);
    expectError(await foreign.patch(`/environments/${d.environments.running}`, { domain: `x-${unique()}.example.com` }), 404, "not_found");
  });
});

describe("a proven host name is held by one environment of the whole installation", () => {
  it("refuses another organisation's domain or alias, as domain or alias, in any case (409 domain_taken), without saying whose it is", async () => {
    const a = await freshOrganization(cp);
    const b = await freshOrganization(cp);
    const shop = `shop-${unique()}.example.com`;
    const www = `www.${shop}`;
    expect((await a.rw.patch(`/environments/${a.d.environments.running}`, { domain: shop, aliases: [www] })).status).toBe(200);
    await proveClaims(dns, a.rw, a.d.environments.running, [shop, www]);
    const target = `/environments/${b.d.environments.running}`;
    const before = (await b.ro.get(target)).body;

    for (const body of [{ domain: shop }, { domain: shop.toUpperCase() }, { domain: www }, { aliases: [shop] }, { aliases: [`free-${unique()}.example.com`, www] }]) {
      const res = await b.rw.patch(target, body);
      expectError(res, 409, "domain_taken");
      const said = JSON.stringify(res.body);
      expect(said).toContain(shop);
      for (const secret of [a.d.organization_id, a.d.environments.running, a.d.project_id, "Demo ", "production"]) expect(said).not.toContain(secret);
    }
    expect((await b.ro.get(target)).body).toEqual(before); // all or nothing: the free alias was not taken either

    // Creating an environment with a taken name makes nothing.
    const created = await b.rw.post("/environments", { project_id: b.d.project_id, name: "qa", domain: shop });
    expectError(created, 409, "domain_taken");
    expect((await b.ro.get(`/projects/${b.d.project_id}/environments`)).body.data.map((e: { name: string }) => e.name)).not.toContain("qa");

    // Once A lets it go, B may have it.
    expect((await a.rw.patch(`/environments/${a.d.environments.running}`, { domain: null, aliases: [] })).status).toBe(200);
    expect((await b.rw.patch(target, { domain: shop, aliases: [www] })).status).toBe(200);
  });

  it("two environments of one organisation claiming one name at once: exactly one gets it", async () => {
    const a = await freshOrganization(cp);
    const name = `race-${unique()}.example.com`;
    const results = await Promise.all([
      a.rw.patch(`/environments/${a.d.environments.stopped}`, { domain: name }),
      a.rw.patch(`/environments/${a.d.environments.running}`, { aliases: [name] }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
  });

  it("a deleted project's environments give their names up", async () => {
    const a = await freshOrganization(cp);
    const b = await freshOrganization(cp);
    const name = `gone-${unique()}.example.com`;
    const project = await a.rw.post("/projects", { name: "Short-lived", server_id: a.d.server_id });
    const env = await a.rw.post("/environments", { project_id: project.body.id, name: "web", domain: name });
    expect(env.status).toBe(201);
    await proveClaims(dns, a.rw, env.body.id, [name]);
    expectError(await b.rw.patch(`/environments/${b.d.environments.running}`, { domain: name }), 409, "domain_taken");
    expect((await a.rw.delete(`/projects/${project.body.id}`, { "x-confirm-delete": "true" })).status).toBe(204);
    expect((await b.rw.patch(`/environments/${b.d.environments.running}`, { domain: name })).status).toBe(200);
  });
});

describe("names under the base domain", () => {
  it("are refused (400 domain_reserved), except the environment's own generated name", async () => {
    const { d, rw } = await freshOrganization(cp);
    const other = await createDemoOrganization(cp.database.db, cp.app.services);
    const theirs = `staging-${hex8(other.environments.stopped)}.${BASE}`;
    const env = d.environments.stopped;
    for (const body of [{ domain: theirs }, { domain: BASE }, { aliases: [`deep.name.${BASE}`] }, { domain: `Anything.${BASE.toUpperCase()}` }]) {
      expectError(await rw.patch(`/environments/${env}`, body), 400, "domain_reserved");
    }
    expectError(await rw.post("/environments", { project_id: d.project_id, name: "qa", domain: theirs }), 400, "domain_reserved");
    const own = `staging-${hex8(env)}.${BASE}`;
    const res = await rw.patch(`/environments/${env}`, { domain: own });
    expect(res.status).toBe(200);
    expect(res.body.url).toBe(`https://${own}`);
  });
});

describe("the platform API's PATCH /projects/{project_id}/environments/{env_id}", () => {
  it("sets the domain for a project admin, refuses a project member, and shows the URL in the project view", async () => {
    const { d } = await freshOrganization(cp);
    const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
    const path = `/projects/${d.project_id}/environments/${d.environments.stopped}`;
    const name = `dash-${unique()}.example.com`;

    expect((await member.api.patch(path, { domain: name })).status).toBe(403);
    const res = await admin.api.patch(path, { domain: name.toUpperCase(), aliases: [`www.${name}`], auto_deploy: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ domain: name, aliases: [`www.${name}`], auto_deploy: true, url: `https://${name}`, certificate: { status: "none" } });
    expectError(await admin.api.patch(path, { domain: "not a host" }), 400, "invalid_domain");
    expectError(await admin.api.patch(path, { domain: `x.${BASE}` }), 400, "domain_reserved");

    // A refused name changes nothing else of the request either.
    const other = await freshOrganization(cp);
    const taken = `held-${unique()}.example.com`;
    expect((await other.rw.patch(`/environments/${other.d.environments.running}`, { domain: taken })).status).toBe(200);
    await proveClaims(dns, other.rw, other.d.environments.running, [taken]);
    expectError(await admin.api.patch(path, { domain: taken, auto_deploy: false }), 409, "domain_taken");

    const view = await admin.api.get(`/organizations/${d.organization_id}/projects`);
    const env = view.body.data[0].environments.find((e: { id: string }) => e.id === d.environments.stopped);
    expect(env).toMatchObject({ domain: name, aliases: [`www.${name}`], auto_deploy: true, url: `https://${name}`, certificate: { status: "none" }, dns: { status: "unchecked" } });
  });
});

describe("without a base domain", () => {
  it("an environment without a domain has no URL; one with a domain has its own", async () => {
    const bare = await startControlPlane({ baseDomain: null });
    try {
      const { d, ro, rw } = await freshOrganization(bare);
      expect((await ro.get(`/environments/${d.environments.stopped}`)).body).toMatchObject({ domain: null, url: null });
      const running = (await ro.get(`/environments/${d.environments.running}`)).body;
      expect(running.url).toBe(`https://${running.domain}`);
      // Nothing is reserved without a base domain.
      expect((await rw.patch(`/environments/${d.environments.stopped}`, { domain: `staging-${unique()}.${BASE}` })).status).toBe(200);
    } finally {
      await bare.close();
    }
  });
});
