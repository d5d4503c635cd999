// Domains are proven before they are held against others, over real HTTP with real DNS
// (dnsmasq on 127.0.0.1, the control plane pointed at it): an unproven claim does not stop
// another organisation; the one that proves the name (TXT _berth-challenge.<name> = its
// token, its DNS pointing at its server, or a CNAME to its generated name) holds it, and the
// other claim is released and leaves its environment, which its owner sees.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { dnsmasqMissing, startTestDns, type TestDns } from "../support/dns-server.ts";
import { expectError, freshOrganization } from "./fixtures.ts";

const BASE = "envs.berth.test";
let cp: TestControlPlane;
let dns: TestDns;
beforeAll(async () => {
  const missing = dnsmasqMissing();
  if (missing) throw new Error(missing);
  dns = await startTestDns();
  cp = await startControlPlane({ baseDomain: BASE, dnsServers: [dns.server] });
});
afterAll(async () => {
  await cp?.close();
  await dns?.close();
});

const unique = () => Math.random().toString(36).slice(2, 10);
type Domain = { name: string; status: string; verification: { type: string; name: string; value: string } };
const domainsOf = async (client: Awaited<ReturnType<typeof freshOrganization>>["ro"], env: string) => (await client.get(`/environments/${env}/domains`)).body.data as Domain[];

describe("a domain claim", () => {
  it("starts pending with the TXT record that proves it, and does not stop another organisation", async () => {
    const a = await freshOrganization(cp);
    const b = await freshOrganization(cp);
    const name = `example-owned-${unique()}.test`;
    expect((await a.rw.patch(`/environments/${a.d.environments.running}`, { domain: name })).status).toBe(200);
    const [claim] = await domainsOf(a.ro, a.d.environments.running);
    expect(claim).toMatchObject({ name, status: "pending", verification: { type: "TXT", name: `_berth-challenge.${name}`, value: expect.stringMatching(/^[0-9a-f]{32}$/) } });
    // B is not answered domain_taken by A's unproven claim.
    const res = await b.rw.patch(`/environments/${b.d.environments.running}`, { domain: name });
    expect(res.status).toBe(200);
    const [theirs] = await domainsOf(b.ro, b.d.environments.running);
    expect(theirs!.status).toBe("pending");
    expect(theirs!.verification.value).not.toBe(claim!.verification.value);
  });

  it("proven by TXT: the prover holds it, the squatter's claim is released and leaves its environment", async () => {
    const squatter = await freshOrganization(cp);
    const owner = await freshOrganization(cp);
    const name = `example-owned-${unique()}.test`;
    expect((await squatter.rw.patch(`/environments/${squatter.d.environments.running}`, { domain: name })).status).toBe(200);
    expect((await owner.rw.patch(`/environments/${owner.d.environments.running}`, { domain: name })).status).toBe(200);
    const [claim] = await domainsOf(owner.ro, owner.d.environments.running);

    await dns.txt(claim!.verification.name, claim!.verification.value);
    const verified = await owner.rw.post(`/environments/${owner.d.environments.running}/domains/${name}/verify`);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ name, status: "verified", verified_at: expect.any(String) });

    // The squatter is told through the domain's status, and no longer serves the name.
    expect(await domainsOf(squatter.ro, squatter.d.environments.running)).toEqual([expect.objectContaining({ name, status: "released" })]);
    expect((await squatter.ro.get(`/environments/${squatter.d.environments.running}`)).body.domain).toBeNull();
    // Now it is the owner's alone: anyone else is refused, the squatter included.
    expectError(await squatter.rw.patch(`/environments/${squatter.d.environments.running}`, { domain: name }), 409, "domain_taken");
    const third = await freshOrganization(cp);
    expectError(await third.rw.patch(`/environments/${third.d.environments.running}`, { aliases: [name] }), 409, "domain_taken");
    // The squatter's own TXT check cannot take it back.
    expect((await squatter.rw.post(`/environments/${squatter.d.environments.running}/domains/${name}/verify`)).body).toMatchObject({ name, status: "released" });
  });

  it("is verified when it is set if its DNS already points at the environment (a CNAME to its generated name)", async () => {
    const org = await freshOrganization(cp);
    const env = org.d.environments.stopped; // "staging"
    const name = `cname-${unique()}.test`;
    await dns.cname(name, `staging-${env.replace(/-/g, "").slice(0, 8)}.${BASE}`);
    await dns.address(`staging-${env.replace(/-/g, "").slice(0, 8)}.${BASE}`, "192.0.2.7");
    expect((await org.rw.patch(`/environments/${env}`, { domain: name })).status).toBe(200);
    expect(await domainsOf(org.ro, env)).toEqual([expect.objectContaining({ name, status: "verified" })]);
  });

  it("stays pending while the DNS proves nothing; verify says so", async () => {
    const org = await freshOrganization(cp);
    const name = `nothing-${unique()}.test`;
    await dns.txt(`_berth-challenge.${name}`, "someone-elses-token");
    expect((await org.rw.patch(`/environments/${org.d.environments.running}`, { domain: name })).status).toBe(200);
    const res = await org.rw.post(`/environments/${org.d.environments.running}/domains/${name}/verify`);
    expect(res.body).toMatchObject({ name, status: "pending", checked_at: expect.any(String), verified_at: null });
    expectError(await org.rw.post(`/environments/${org.d.environments.running}/domains/not-mine-${unique()}.test/verify`), 404, "not_found");
  });

  it("is proven by the verification job's pass once its DNS points at the environment's server", async () => {
    const org = await freshOrganization(cp);
    const env = org.d.environments.running;
    const name = `later-${unique()}.test`;
    expect((await org.rw.patch(`/environments/${env}`, { domain: name })).status).toBe(200);
    expect((await domainsOf(org.ro, env))[0]!.status).toBe("pending");
    // The server's agent reported its public address; the customer points the name at it.
    await cp.database.pool.query(
      `update servers set proxy = jsonb_build_object('running', true, 'image', 'caddy', 'public_addresses', jsonb_build_array('198.51.100.9'), 'error', null, 'checked_at', now()) where id = $1`,
      [org.d.server_id],
    );
    await dns.address(name, "198.51.100.9");
    await cp.app.services.domainVerification.pass();
    expect((await domainsOf(org.ro, env))[0]).toMatchObject({ name, status: "verified" });
  });
});
