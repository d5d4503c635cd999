// Where environments are served, in headless Chromium against a real control plane and a
// simulated agent on the real link: the project page opens each environment's URL in a new
// tab (none when it has no URL) and shows its certificate, which follows the agent's
// proxy.state live; an admin sets the domain from the environment page; the server card
// shows its proxy. The environment page also holds its variables: added, updated and deleted
// by an admin, only ever shown masked, not shown to a project member.
import { expect, it } from "vitest";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const s = dashboardSuite();

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
