// The ERP credentials in headless Chromium against a real control plane: an owner rotates
// the master password and the administrator's password from the environment page and sees
// each new one once (not on the page after a reload; the next deploy command carries them);
// a project member sees no button.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { SignedCommand } from "@berth/protocol";
import type { DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import { publicClient } from "../support/http.ts";
import { addPerson, type Person } from "../support/people.ts";
import { urlOf } from "../support/sse.ts";
import { launchBrowser, openPage, signIn } from "./browser.ts";

let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;
let stopAgent: () => void;
let browser: Browser;
let owner: Person;
let member: Person;
const commands: SignedCommand[] = [];
const pages: (Page & { scriptErrors: string[] })[] = [];

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  base = urlOf(cp);
  ({ d, stop: stopAgent } = await demoOrganizationWithAgent(cp, base, (cmd) => commands.push(cmd)));
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  for (const p of pages) expect(p.scriptErrors).toEqual([]);
  stopAgent?.();
  await browser?.close();
  await cp?.close();
});

async function pageFor(person: Person) {
  const page = await openPage(browser);
  pages.push(page);
  await signIn(page, base, person.email);
  return page;
}

it("an owner rotates the master and administrator passwords and sees each once; the next deploy carries them; a member has no button", { timeout: 60_000 }, async () => {
  const page = await pageFor(owner);
  await page.goto(`${base}/#/environments/${d.environments.stopped}`);
  await page.getByRole("button", { name: "Rotate master password" }).click();
  const box = page.getByRole("status").filter({ hasText: "New master password" });
  await box.waitFor({ timeout: 10_000 });
  const password = (await box.locator(".secret-value").textContent())!.trim();
  expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
  expect(await box.textContent()).toContain("only time it is shown");

  // Shown once: a reload of the page does not show it again.
  await page.reload();
  await page.getByRole("button", { name: "Rotate master password" }).waitFor();
  expect(await page.content()).not.toContain(password);

  await page.getByRole("button", { name: "Rotate administrator password" }).click();
  const loginBox = page.getByRole("status").filter({ hasText: "New administrator password" });
  await loginBox.waitFor({ timeout: 10_000 });
  const login = (await loginBox.locator(".secret-value").textContent())!.trim();
  expect(login).toMatch(/^[A-Za-z0-9_-]{32}$/);
  expect(login).not.toBe(password);

  const task = await publicClient(cp.app, d.api_keys.org_rw).post(`/environments/${d.environments.stopped}/deploy`);
  expect(task.status).toBe(202);
  await expect
    .poll(() => commands.find((c) => (c.params as { deployment_id?: string }).deployment_id === task.body.task_id)?.params)
    .toMatchObject({ admin_passwd: password, admin_login: { password: login } });

  const memberPage = await pageFor(member);
  await memberPage.goto(`${base}/#/environments/${d.environments.stopped}`);
  await memberPage.getByRole("heading", { name: /staging/ }).first().waitFor();
  expect(await memberPage.getByRole("button", { name: "Rotate master password" }).count()).toBe(0);
  expect(await memberPage.getByRole("button", { name: "Rotate administrator password" }).count()).toBe(0);
});
