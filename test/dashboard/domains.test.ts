// Where environments are served, in headless Chromium against a real control plane and a
// simulated agent on the real link: the project page opens each environment's URL in a new
// tab (none when it has no URL) and shows its certificate, which follows the agent's
// proxy.state live; an admin sets the domain from the environment page; the server card
// shows its proxy. The environment page also holds its variables: added, updated and deleted
// by an admin, only ever shown masked, not shown to a project member; and its domains'
// verification against a real DNS server (dnsmasq): pending with the records that prove it,
// verified by "Check now" once the TXT record is served, released when another organisation
// proved the name first.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { dnsmasqMissing, startTestDns, type TestDns } from "../support/dns-server.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite, type SuiteControlPlaneOptions } from "./dashboard-suite.ts";

// Registered before the suite's own hooks: the DNS server runs before the control plane
// starts (pointed at it) and stops after it.
let dns: TestDns;
const controlPlane: SuiteControlPlaneOptions = {};
beforeAll(async () => {
  const missing = dnsmasqMissing();
  if (missing) throw new Error(missing);
  dns = await startTestDns();
  controlPlane.dnsServers = [dns.server];
});
afterAll(async () => dns?.close());
const s = dashboardSuite(undefined, controlPlane);

async function domainOf(envId: string): Promise<string> {
  const { rows } = await s.cp.database.pool.query<{ domain: string }>("select domain from environments where id = $1", [envId]);
  return rows[0]!.domain;
}

it("the project page opens an environment's URL in a new tab and shows its certificate, live", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  const running = page.locator(`tr[data-environment-id="${s.d.environments.running}"]`);
  await running.waitFor();
  const domain = await domainOf(s.d.environments.running);
  const open = running.getByRole("link", { name: /^Open production at/ });
  expect(await open.getAttribute("href")).toBe(`https://${domain}`);
  expect(await open.getAttribute("target")).toBe("_blank");
  expect((await open.getAttribute("rel"))?.split(" ")).toContain("noopener");
  expect(await running.locator(".certificate").textContent()).toBe("no certificate");
  // Staging has no domain and the installation no base domain: nothing to open.
  const staging = page.locator(`tr[data-environment-id="${s.d.environments.stopped}"]`);
  expect(await staging.getByRole("link", { name: /^Open/ }).count()).toBe(0);
  expect(await staging.textContent()).toContain("no address");

  // The agent reports the certificate issued: the row follows without a reload.
  await s.agent.sendAcked([
    s.agent.event({
      kind: "proxy.state",
      running: true,
      image: "caddy:2",
      public_addresses: ["203.0.113.5"],
      error: null,
      routes: [
        {
          environment_id: s.d.environments.running,
          mode: "serving",
          domains: [
            {
              name: domain,
              dns: { status: "ok", resolved: ["203.0.113.5"], expected: ["203.0.113.5"] },
              certificate: { status: "valid", not_after: "2027-02-01T12:00:00.000Z", issuer: "Pebble", error: null },
            },
          ],
        },
      ],
    }),
  ]);
  await expect.poll(() => running.locator(".certificate").getAttribute("data-certificate"), { timeout: 10_000 }).toBe("valid");
  expect(await running.locator(".certificate").textContent()).toMatch(/^certificate valid until /);
  await screenshot(page, "projects-addresses");

  // The server card shows the proxy and where domains must point.
  await page.goto(`${s.base}/#/servers`);
  const card = page.locator(`li.server-card[data-server-id="${s.d.server_id}"]`);
  await card.waitFor();
  expect(await card.locator(".proxy").textContent()).toBe("Proxy: running (caddy:2) · point domains to 203.0.113.5");
});

it("an owner sets the domain from the environment page; a project member sees no form", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  await page.getByLabel("Domain", { exact: true }).fill("Staging.Shop.Example.com");
  await page.getByLabel("Aliases").fill("www.staging.shop.example.com, old.shop.example.com");
  await page.getByRole("button", { name: "Save settings" }).click();
  const open = page.getByRole("link", { name: /^Open staging at/ });
  await open.waitFor({ timeout: 10_000 });
  expect(await open.getAttribute("href")).toBe("https://staging.shop.example.com");
  expect(await page.locator("dl.facts").textContent()).toContain("www.staging.shop.example.com, old.shop.example.com");
  // A refused name is told in words.
  await page.getByLabel("Domain", { exact: true }).fill("192.0.2.1");
  await page.getByRole("button", { name: "Save settings" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("not an IP address");

  const memberPage = await s.pageFor(s.member);
  await memberPage.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  await memberPage.getByRole("link", { name: /^Open staging at/ }).waitFor();
  expect(await memberPage.getByRole("button", { name: "Save settings" }).count()).toBe(0);
  expect(await memberPage.locator("section.variables").count()).toBe(0);
});

const SECRET = "smtp-secret-never-shown";
const storedValue = async (name: string) => {
  const { rows } = await s.cp.database.pool.query<{ v: string | null }>("select variables -> $2 ->> 'value_enc' as v from environments where id = $1", [s.d.environments.stopped, name]);
  return rows[0]?.v ?? null;
};

it("an owner adds, updates and deletes a variable, shown masked only", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  const section = page.locator("section.variables");
  await section.getByText("No variables.").waitFor();

  await section.getByLabel("Name").fill("SMTP_PASSWORD");
  await section.getByLabel("Value").fill(SECRET);
  await section.getByRole("button", { name: "Save variable" }).click();
  const row = section.locator('tr[data-variable="SMTP_PASSWORD"]');
  await row.waitFor();
  expect(await row.locator(".masked").textContent()).toBe("••••");
  expect(await page.content()).not.toContain(SECRET);
  expect(await section.getByLabel("Value").inputValue()).toBe("");
  const first = await storedValue("SMTP_PASSWORD");
  expect(first).toEqual(expect.any(String));

  // The same name again updates it.
  await section.getByLabel("Name").fill("SMTP_PASSWORD");
  await section.getByLabel("Value").fill(`${SECRET}-2`);
  await section.getByRole("button", { name: "Save variable" }).click();
  await expect.poll(() => storedValue("SMTP_PASSWORD")).not.toBe(first);
  expect(await section.locator("tbody tr").count()).toBe(1);

  // A reserved name is refused in words.
  await section.getByLabel("Name").fill("PASSWORD");
  await section.getByLabel("Value").fill("x");
  await section.getByRole("button", { name: "Save variable" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("cannot be overridden");
  await screenshot(page, "environment-variables");

  await row.getByRole("button", { name: "Delete SMTP_PASSWORD" }).click();
  await section.getByText("No variables.").waitFor();
  expect(await storedValue("SMTP_PASSWORD")).toBeNull();
});

const tokenOf = async (envId: string, name: string) => {
  const { rows } = await s.cp.database.pool.query<{ token: string }>("select token from environment_domains where environment_id = $1 and name = $2", [envId, name]);
  return rows[0]!.token;
};

it("an environment's domain shows pending with the TXT record to set; Check now turns it verified once DNS serves it", { timeout: 90_000 }, async () => {
  const env = s.d.environments.running;
  const domain = await domainOf(env);
  const token = await tokenOf(env, domain);
  // The server's agent reported its public address: the A/AAAA alternative points there.
  await s.cp.database.pool.query(
    `update servers set proxy = jsonb_build_object('running', true, 'image', 'caddy:2', 'public_addresses', jsonb_build_array('203.0.113.5'), 'error', null, 'checked_at', now()) where id = $1`,
    [s.d.server_id],
  );
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${env}`);
  const card = page.locator(`section.domains article.domain-claim[data-domain="${domain}"]`);
  await card.waitFor({ timeout: 10_000 });
  expect(await card.getAttribute("data-status")).toBe("pending");
  expect(await card.locator("h3 .badge").textContent()).toBe("pending");
  expect(await card.locator(".domain-status-text").textContent()).toMatch(/^Not proven yet .*another organisation that proves the name first takes it/);
  const records = await card.locator("tbody tr").evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  expect(records).toEqual([
    ["TXT", `_berth-challenge.${domain}`, token],
    ["or A/AAAA", domain, "203.0.113.5"],
  ]);

  // Nothing in DNS yet: the check says so in words, and the name stays pending.
  await card.getByRole("button", { name: `Check now ${domain}` }).click();
  await expect.poll(() => card.locator(".check-result").textContent(), { timeout: 10_000 }).toBe(`${domain} is still pending: no DNS record proves it yet. DNS changes can take a while to be seen; check again later.`);
  expect(await card.getAttribute("data-status")).toBe("pending");
  await screenshot(page, "environment-domain-pending");

  // The customer publishes the TXT record; Check now proves the name.
  await dns.txt(`_berth-challenge.${domain}`, token);
  await card.getByRole("button", { name: `Check now ${domain}` }).click();
  await expect.poll(() => card.getAttribute("data-status"), { timeout: 10_000 }).toBe("verified");
  expect(await card.locator(".check-result").textContent()).toBe(`${domain} is verified: it is this environment's alone.`);
  expect(await page.locator("#announce").textContent()).toBe(`${domain} is verified: it is this environment's alone.`);
  expect(await card.locator(".domain-status-text").textContent()).toMatch(/^Verified .*: this name is this environment's alone\.$/);
  expect(await card.locator("table").count()).toBe(0);
  expect(await card.getByRole("button", { name: /Check now/ }).count()).toBe(0);
  expect(await card.textContent()).not.toContain("null");
  await screenshot(page, "environment-domain-verified");
  const { rows } = await s.cp.database.pool.query<{ status: string }>("select status from environment_domains where environment_id = $1 and name = $2", [env, domain]);
  expect(rows[0]!.status).toBe("verified");
});

it("a name another organisation proved first shows released and why; a project member sees the domains without Check now", { timeout: 90_000 }, async () => {
  const env = s.d.environments.running;
  const name = `shop-${Math.random().toString(36).slice(2, 10)}.example.com`;
  expect((await s.owner.api.patch(`/projects/${s.d.project_id}/environments/${env}`, { aliases: [name] })).status).toBe(200);
  // Another organisation claims the same name and proves it with its own TXT record.
  const other = await createDemoOrganization(s.cp.database.db, s.cp.app.services);
  const theirs = { organizationId: other.organization_id, projectId: null };
  await s.cp.app.services.environments.update(theirs, other.environments.stopped, { domain: name });
  await dns.txt(`_berth-challenge.${name}`, await tokenOf(other.environments.stopped, name));
  expect((await s.cp.app.services.environments.verifyDomain(theirs, other.environments.stopped, name)).status).toBe("verified");

  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${env}`);
  const card = page.locator(`section.domains article.domain-claim[data-domain="${name}"]`);
  await card.waitFor({ timeout: 10_000 });
  expect(await card.getAttribute("data-status")).toBe("released");
  expect(await card.locator("h3 .badge").textContent()).toBe("released");
  expect(await card.locator(".domain-status-text").textContent()).toBe(
    "Released: another organisation proved this name first, so it was taken out of this environment, which no longer serves it. Choose another name in the settings.",
  );
  expect(await card.getByRole("button", { name: /Check now/ }).count()).toBe(0);
  expect(await page.locator("dl.facts").textContent()).not.toContain(name);
  expect(await page.locator("section.domains").textContent()).not.toContain("null");
  await screenshot(page, "environment-domain-released");

  // A project member sees how the names stand, and may not check them.
  const later = `later-${Math.random().toString(36).slice(2, 10)}.example.com`;
  expect((await s.owner.api.patch(`/projects/${s.d.project_id}/environments/${env}`, { aliases: [later] })).status).toBe(200);
  const memberPage = await s.pageFor(s.member);
  await memberPage.goto(`${s.base}/#/environments/${env}`);
  const pending = memberPage.locator(`section.domains article.domain-claim[data-domain="${later}"]`);
  await pending.waitFor({ timeout: 10_000 });
  expect(await pending.getAttribute("data-status")).toBe("pending");
  expect(await pending.locator("tbody tr th").first().textContent()).toBe("TXT");
  expect(await memberPage.getByRole("button", { name: /Check now/ }).count()).toBe(0);
});
