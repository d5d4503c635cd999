// Domain verification through the platform API (session tokens, what the dashboard calls), over
// real HTTP with real DNS (dnsmasq on 127.0.0.1, the control plane pointed at it): anyone with
// a role in the project sees each name's status and what proves it, a project admin checks a
// name now and proves it by TXT or by pointing it at the server, another organisation's member
// sees none of it, and the organisation that lost the name sees it released.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { dnsmasqMissing, startTestDns, type TestDns } from "../support/dns-server.ts";
import { addPerson, type Person } from "../support/people.ts";
import { urlOf } from "../support/sse.ts";

const BASE = "envs.berth.test";
const SERVER_ADDRESS = "198.51.100.9";
let cp: TestControlPlane;
let dns: TestDns;
let d: DemoOrganization;
let other: DemoOrganization;
let admin: Person;
let member: Person;
let outsider: Person;

beforeAll(async () => {
  const missing = dnsmasqMissing();
  if (missing) throw new Error(missing);
  dns = await startTestDns();
  cp = await startControlPlane({ listen: true, baseDomain: BASE, dnsServers: [dns.server] });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  other = await createDemoOrganization(cp.database.db, cp.app.services);
  admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  outsider = await addPerson(cp.app, "org_owner", { organizationId: other.organization_id });
  // The server's agent reported its public address (the A/AAAA proof points there).
  await cp.database.pool.query(
    `update servers set proxy = jsonb_build_object('running', true, 'image', 'caddy', 'public_addresses', jsonb_build_array($2::text), 'error', null, 'checked_at', now()) where id = $1`,
    [d.server_id, SERVER_ADDRESS],
  );
}, 60_000);
afterAll(async () => {
  await cp?.close();
  await dns?.close();
});

/** A platform API call over real HTTP with the person's session token. */
async function call(who: Person, method: "GET" | "POST" | "PATCH", path: string, body?: object) {
  const res = await fetch(`${urlOf(cp)}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${who.token}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { data?: Domain[] } };
}
type Domain = { name: string; status: string; verification: { type: string; name: string; value: string }; alternatives: { addresses: string[]; cname: string | null } };

const unique = () => Math.random().toString(36).slice(2, 10);
const hex8 = (id: string) => id.replace(/-/g, "").slice(0, 8);

it("shows each name's status and proofs to the project; an admin proves one by TXT, another by its A record; other organisations see nothing", { timeout: 60_000 }, async () => {
  const env = d.environments.stopped; // "staging", no domain yet
  const name = `erp-${unique()}.example.com`;
  const alias = `www-${unique()}.example.com`;
  expect((await call(admin, "PATCH", `/projects/${d.project_id}/environments/${env}`, { domain: name, aliases: [alias] })).status).toBe(200);

  // A project member sees both names pending, with the TXT record and the other proofs.
  const listed = await call(member, "GET", `/environments/${env}/domains`);
  expect(listed.status).toBe(200);
  const alternatives = { addresses: [SERVER_ADDRESS], cname: `staging-${hex8(env)}.${BASE}` };
  expect(listed.body.data).toEqual([
    expect.objectContaining({ name, status: "pending", verification: { type: "TXT", name: `_berth-challenge.${name}`, value: expect.stringMatching(/^[0-9a-f]{32}$/) }, alternatives }),
    expect.objectContaining({ name: alias, status: "pending", alternatives, verified_at: null }),
  ]); // sorted by name: erp-… before www-…
  const claim = listed.body.data!.find((c) => c.name === name)!;

  // Another organisation's owner: no such environment, whether listing or checking.
  expect(await call(outsider, "GET", `/environments/${env}/domains`)).toMatchObject({ status: 404, body: { error: "not_found", message: "Environment not found" } });
  expect(await call(outsider, "POST", `/environments/${env}/domains/${name}/verify`)).toMatchObject({ status: 404, body: { error: "not_found" } });
  expect((await call(admin, "GET", `/environments/${crypto.randomUUID()}/domains`)).status).toBe(404);
  // A project member may look, not check (checking is changing the domain's state).
  expect(await call(member, "POST", `/environments/${env}/domains/${name}/verify`)).toMatchObject({ status: 403, body: { error: "permission_denied" } });

  // Nothing in DNS yet: still pending, now checked.
  expect((await call(admin, "POST", `/environments/${env}/domains/${name}/verify`)).body).toMatchObject({ name, status: "pending", checked_at: expect.any(String), verified_at: null });
  // The TXT record published: verified.
  await dns.txt(claim.verification.name, claim.verification.value);
  const verified = await call(admin, "POST", `/environments/${env}/domains/${name.toUpperCase()}/verify`);
  expect(verified).toMatchObject({ status: 200, body: { name, status: "verified", verified_at: expect.any(String), alternatives } });
  expect(await call(admin, "POST", `/environments/${env}/domains/not-mine-${unique()}.example.com/verify`)).toMatchObject({ status: 404, body: { error: "not_found" } });

  // Another organisation claims the alias (an unproven claim does not stop it); the alias's A
  // record at the server proves it for this one, and the other's claim is released.
  expect((await call(outsider, "PATCH", `/projects/${other.project_id}/environments/${other.environments.stopped}`, { domain: alias })).status).toBe(200);
  await dns.address(alias, SERVER_ADDRESS);
  expect((await call(admin, "POST", `/environments/${env}/domains/${alias}/verify`)).body).toMatchObject({ name: alias, status: "verified" });
  expect((await call(member, "GET", `/environments/${env}/domains`)).body.data!.map((c) => [c.name, c.status])).toEqual([
    [name, "verified"],
    [alias, "verified"],
  ]);
  expect((await call(outsider, "GET", `/environments/${other.environments.stopped}/domains`)).body.data).toEqual([expect.objectContaining({ name: alias, status: "released" })]);
});
