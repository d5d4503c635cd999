// The dashboard in headless Chromium against a real control plane, a real agent process
// and the real Docker engine: live server figures, a deployment's steps and logs arriving,
// adding a server that comes online, API keys and webhooks, what a project member may not
// do, and a support restart that the organisation's owner reads in the audit log.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "../support/agent-process.ts";
import type { TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { launchBrowser, openPage, openSignIn, screenshot, signIn } from "./browser.ts";
import { removeEnvironmentObjects, startShop } from "../support/real-agent.ts";

let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;
let browser: Browser;
let owner: Person;
let member: Person;
let staff: Person;
let projectId: string;
let envId: string;
const agents: AgentProcess[] = [];
const pages: (Page & { scriptErrors: string[] })[] = [];
const PROJECT = "Dashboard shop";

beforeAll(async () => {
  const shop = await startShop(PROJECT);
  ({ cp, d, projectId, envId } = shop);
  agents.push(shop.agent);
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId });
  staff = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  for (const a of agents) await a.cleanup();
  await cp?.close();
  await removeEnvironmentObjects([envId]);
});

async function pageFor(person: Person) {
  const page = await openPage(browser);
  pages.push(page);
  await signIn(page, base, person.email);
  return page;
}

let ownerPage: Page & { scriptErrors: string[] };

it("tells a wrong password in words, then signs in and shows the agent's server online with live figures", async () => {
  const wrong = await openPage(browser);
  pages.push(wrong);
  await openSignIn(wrong, base);
  await wrong.getByLabel("E-mail address").fill(owner.email);
  await wrong.getByLabel("Password").fill("not the password");
  await wrong.getByRole("button", { name: "Sign in" }).click();
  await expect.poll(() => wrong.getByRole("alert").textContent()).toContain("The e-mail address or password is wrong");
  await wrong.context().close();

  ownerPage = await pageFor(owner);
  const card = ownerPage.locator(`li.server-card[data-server-id="${d.server_id}"]`);
  await card.waitFor();
  await expect.poll(() => card.locator(".badge").first().textContent(), { timeout: 30_000 }).toBe("Online");
  // The first sample comes in, then another replaces it on the page without a reload.
  await expect.poll(() => card.getAttribute("data-sampled-at"), { timeout: 40_000 }).not.toBeNull();
  const first = await card.getAttribute("data-sampled-at");
  const firstCpu = await card.locator(".metric-cpu").textContent();
  expect(firstCpu).toMatch(/^\d+\.\d %$/);
  await expect.poll(() => card.getAttribute("data-sampled-at"), { timeout: 40_000, interval: 500 }).not.toBe(first);
  await expect(card.locator(".metric-ram").textContent()).resolves.toMatch(/^\d+\.\d \/ \d+\.\d GB$/);
  await expect(card.locator(".room").textContent()).resolves.toMatch(/Room for \d+ more environments?|Full/);
  await expect(card.locator(".envs").textContent()).resolves.toContain(`${PROJECT}/production`);
  await screenshot(ownerPage, "servers");

  // The history chart (uPlot, served by the control plane) opens from the keyboard.
  await card.getByRole("button", { name: /History/ }).focus();
  await ownerPage.keyboard.press("Enter");
  await ownerPage.locator("dialog.history .uplot").waitFor({ timeout: 15_000 });
  await screenshot(ownerPage, "server-history");
  await ownerPage.keyboard.press("Escape");
}, 120_000);

it("deploys an environment and shows its steps and logs as they arrive", async () => {
  await ownerPage.goto(`${base}/#/projects`);
  await ownerPage.getByRole("button", { name: `Deploy ${PROJECT} production` }).click();
  await ownerPage.waitForURL(/#\/deployments\/[0-9a-f-]{36}$/);
  const logs = ownerPage.locator("ol.logs li");
  await expect.poll(() => logs.count(), { timeout: 60_000 }).toBeGreaterThan(3);
  await expect.poll(() => ownerPage.locator(".step-completed").count(), { timeout: 60_000 }).toBeGreaterThan(1);
  await screenshot(ownerPage, "deployment-running");
  const status = ownerPage.locator("#deployment-status");
  await expect.poll(() => status.textContent(), { timeout: 180_000, interval: 500 }).toMatch(/^(success|failed|cancelled)$/);
  expect(await status.textContent(), (await ownerPage.locator(".error-text").textContent()) ?? "").toBe("success");
  await expect.poll(() => ownerPage.locator("#deployment-percent").textContent(), { timeout: 10_000 }).toBe("100 % done");
  expect(await logs.count()).toBeGreaterThan(5);
  await expect(ownerPage.locator("ol.logs").textContent()).resolves.toContain("[starting_container]");
  await screenshot(ownerPage, "deployment");

  // The environment's history lists it, with a rollback button for a successful deploy.
  await ownerPage.goto(`${base}/#/environments/${envId}`);
  await ownerPage.getByRole("button", { name: /Roll back to this/ }).first().waitFor();
  await expect(ownerPage.locator("table").textContent()).resolves.toContain("success");
}, 240_000);

it("a project member sees no deploy button and is refused with 403 anyway", async () => {
  const page = await pageFor(member);
  await page.goto(`${base}/#/projects`);
  await page.locator(`tr[data-environment-id="${envId}"]`).waitFor();
  // Keyboard: a new page puts focus on its heading; the next Tab is its first control.
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Projects");
  await page.keyboard.press("Tab");
  expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("production");
  expect(await page.getByRole("button", { name: /Deploy/ }).count()).toBe(0);
  expect(await page.getByRole("button", { name: /Restart|Stop|Start/ }).count()).toBe(0);
  const deploy = await member.api.post("/deployments", { project_id: projectId, environment_id: envId, git_branch: "main" });
  expect(deploy.status).toBe(403);
  expect(deploy.body.message).toBe("You don't have permission to deploy.");
  const restart = await member.api.post(`/environments/${envId}/actions/restart`);
  expect(restart.status).toBe(403);
  // And the page says so in words when the API refuses (the same call from the browser).
  const status = await page.evaluate(async ([env]) => {
    const token = sessionStorage.getItem("berth.session");
    const res = await fetch(`/api/v1/environments/${env}/actions/restart`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
    return res.status;
  }, [envId]);
  expect(status).toBe(403);
  await screenshot(page, "projects-member");
}, 60_000);

it("adds a server: the install command, then the server online as its agent connects", async () => {
  await ownerPage.goto(`${base}/#/servers/new`);
  await ownerPage.getByLabel("Server name").fill("web-2");
  await ownerPage.getByRole("button", { name: "Create server and install command" }).click();
  const command = (await ownerPage.locator("#install-command").textContent()) ?? "";
  expect(command).toMatch(new RegExp(`^curl -fsSL ${base.replaceAll(".", "\\.")}/install\\.sh \\| sudo sh -s -- --key [A-Za-z0-9+/]{43}= --token berth_enr_[A-Za-z0-9_-]+$`));
  await screenshot(ownerPage, "add-server");
  const token = command.split("--token ")[1]!;
  const agent = await AgentProcess.create();
  agents.push(agent);
  await agent.enroll(base, token);
  agent.start();
  await expect.poll(() => ownerPage.locator("#agent-state").textContent(), { timeout: 60_000, interval: 500 }).toMatch(/Online web-2 is connected/);
  await screenshot(ownerPage, "add-server-online");
  await ownerPage.getByRole("link", { name: "See it with the other servers" }).click();
  await expect.poll(() => ownerPage.locator("li.server-card").count()).toBe(2);
}, 120_000);

it("creates an API key and a webhook (secrets shown once), lists and revokes them", async () => {
  ownerPage.on("dialog", (dialog) => void dialog.accept());
  await ownerPage.goto(`${base}/#/settings`);
  await ownerPage.getByLabel("Key name").fill("CI deploys");
  await ownerPage.getByLabel("Access").selectOption("full_access");
  await ownerPage.getByRole("button", { name: "Create API key" }).click();
  await expect.poll(() => ownerPage.locator(".secret-value").first().textContent()).toMatch(/^svc_live_rw_/);
  await ownerPage.getByLabel("Target URL").fill("https://hooks.example.com/berth-hook");
  await ownerPage.getByRole("button", { name: "Create webhook" }).click();
  await expect.poll(() => ownerPage.locator(".secret-value").last().textContent()).toMatch(/^whsec_/);
  await expect(ownerPage.locator("#hooks-h + form ~ div table").textContent()).resolves.toContain("https://hooks.example.com/berth-hook");
  await screenshot(ownerPage, "api-keys-webhooks");
  await ownerPage.getByRole("button", { name: "Revoke CI deploys" }).click();
  await expect.poll(() => ownerPage.getByRole("row", { name: /CI deploys/ }).textContent()).toContain("Revoked");
  await ownerPage.getByRole("button", { name: "Delete webhook https://hooks.example.com/berth-hook" }).click();
  await expect.poll(() => ownerPage.getByText("No webhook subscriptions.").count()).toBe(1);
}, 60_000);

it("switches organisation: the servers of the other one, over its own live stream", async () => {
  const other = await createDemoOrganization(cp.database.db, cp.app.services);
  await cp.app.services.memberships.addToOrganization(other.organization_id, owner.userId, "admin");
  await ownerPage.goto(`${base}/#/servers`);
  await ownerPage.reload(); // /me is read at start
  const switcher = ownerPage.getByLabel("Organisation");
  await switcher.selectOption(other.organization_id);
  await ownerPage.locator(`li.server-card[data-server-id="${other.server_id}"]`).waitFor();
  expect(await ownerPage.locator("li.server-card").count()).toBe(1);
  await expect.poll(() => ownerPage.locator("#live-state").textContent()).toBe("Live");
  // An admin there: no audit log (owners only) in the navigation.
  expect(await ownerPage.getByRole("link", { name: "Audit log" }).count()).toBe(0);
  await switcher.selectOption(d.organization_id);
  await ownerPage.locator(`li.server-card[data-server-id="${d.server_id}"]`).waitFor();
}, 60_000);

it("support staff restart an environment with a reason; the owner reads it in the audit log", async () => {
  const page = await pageFor(staff);
  await page.waitForURL(/#\/support$/);
  const server = (await cp.database.pool.query("select name from servers where id = $1", [d.server_id])).rows[0] as { name: string };
  await page.getByLabel(/Organisation, server, environment/).fill(server.name);
  await page.getByRole("button", { name: "Search" }).click();
  await page.getByRole("link", { name: server.name }).click();
  await page.locator("#agent-state").waitFor();
  await expect(page.locator("#agent-state").textContent()).resolves.toContain("online");
  await page.getByLabel("Command", { exact: true }).selectOption("restart");
  await page.getByLabel("Environment", { exact: true }).selectOption(envId);
  // Without a reason the form does not go out.
  await page.getByRole("button", { name: "Issue command" }).click();
  expect(await page.locator(".outcome").textContent()).toBe("");
  const reason = "Customer asked for a restart in ticket 4711";
  await page.getByLabel("Reason", { exact: true }).fill(reason);
  await page.getByRole("button", { name: "Issue command" }).click();
  await expect.poll(() => page.locator(".outcome").textContent(), { timeout: 30_000 }).toContain("restart requested");
  await expect.poll(() => page.locator("table").first().textContent(), { timeout: 30_000 }).toContain("restart");
  await screenshot(page, "support-console");

  await ownerPage.goto(`${base}/#/audit`);
  const row = ownerPage.getByRole("row", { name: /support\.restart/ });
  await row.waitFor({ timeout: 15_000 });
  const text = (await row.textContent()) ?? "";
  expect(text).toContain(reason);
  expect(text).toContain(staff.email);
  expect(text).toContain("production");
  await screenshot(ownerPage, "audit-log");
}, 90_000);

it("raised no script errors on any page", () => {
  expect(pages.flatMap((p) => p.scriptErrors)).toEqual([]);
});
