// The dashboard's people pages in headless Chromium against a real control plane that mails
// over SMTP to a real receiver: an owner invites by e-mail; the invitee opens the mailed link
// signed out, creates an account and lands in the organisation; the owner changes a role
// (an admin may not make owners), signs a member out everywhere, revokes an invitation and
// removes a member; everyone sees their own sessions.
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { invitationToken, Mailbox } from "../support/mailbox.ts";
import { addPerson, type Person } from "../support/people.ts";
import { launchBrowser, openPage, screenshot, signIn } from "./browser.ts";

let mailbox: Mailbox;
let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;
let browser: Browser;
let owner: Person;
let admin: Person;
let ownerPage: Page & { scriptErrors: string[] };
const pages: (Page & { scriptErrors: string[] })[] = [];

beforeAll(async () => {
  mailbox = await Mailbox.start();
  cp = await startControlPlane({ listen: true, mail: { smtpUrl: mailbox.url, from: "berth@example.test" } });
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  for (const p of pages) expect(p.scriptErrors).toEqual([]);
  await browser?.close();
  await cp?.close();
  await mailbox?.close();
});

async function pageFor(person: Person) {
  const page = await openPage(browser);
  pages.push(page);
  await signIn(page, base, person.email);
  return page;
}

const row = (page: Page, email: string) => page.locator(`tr[data-email="${email}"]`);

it("an owner invites by e-mail; the invitee opens the link signed out, makes an account and is in the organisation", { timeout: 60_000 }, async () => {
  ownerPage = await pageFor(owner);
  await ownerPage.getByRole("link", { name: "Members" }).click();
  await ownerPage.getByRole("heading", { name: "Invitations" }).waitFor();
  await ownerPage.getByLabel("E-mail address").fill("newcomer@example.test");
  await ownerPage.getByLabel("Role", { exact: true }).selectOption("admin");
  await ownerPage.getByRole("button", { name: "Send invitation" }).click();
  await row(ownerPage, "newcomer@example.test").waitFor();
  await expect(row(ownerPage, "newcomer@example.test").textContent()).resolves.toContain("pending");
  await screenshot(ownerPage, "members-invited");

  const token = invitationToken(await mailbox.latestTo("newcomer@example.test"));
  const invitee = await openPage(browser);
  pages.push(invitee);
  await invitee.goto(`${base}/#/invite/${token}`);
  await invitee.getByRole("heading", { name: /^Join / }).waitFor();
  await invitee.getByLabel("Your name").fill("New Comer");
  await invitee.getByLabel("Choose a password").fill("a good long password");
  await invitee.getByRole("button", { name: "Create account and join" }).click();
  // Signed in, in the organisation.
  await invitee.getByRole("link", { name: "Members" }).waitFor();
  await expect.poll(() => invitee.locator("#whoami").textContent()).toBe("New Comer");

  await ownerPage.reload();
  await row(ownerPage, "newcomer@example.test").locator("select").waitFor();
  await expect(row(ownerPage, "newcomer@example.test").locator("select").inputValue()).resolves.toBe("admin");
  // The invitation is spent: the link now says so.
  const again = await openPage(browser);
  pages.push(again);
  await again.goto(`${base}/#/invite/${token}`);
  await expect.poll(() => again.locator("main").textContent()).toContain("unknown, expired, revoked or already used");
});

it("roles change under the owner rules; a member is signed out everywhere, then removed; an invitation is revoked", async () => {
  const target = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
  // An admin cannot make owners: the choice is not offered.
  const adminPage = await pageFor(admin);
  await adminPage.getByRole("link", { name: "Members" }).click();
  await row(adminPage, target.email).locator("select").waitFor();
  await expect(row(adminPage, target.email).locator('option[value="owner"]').isDisabled()).resolves.toBe(true);
  await row(adminPage, target.email).locator("select").selectOption("admin");
  await expect.poll(async () => (await cp.app.services.memberships.members(d.organization_id)).find((m) => m.user_id === target.userId)?.role).toBe("admin");

  // Signed out everywhere: their token stops working.
  adminPage.once("dialog", (dialog) => void dialog.accept());
  await row(adminPage, target.email).getByRole("button", { name: "Sign out everywhere" }).click();
  await expect.poll(async () => (await target.api.get("/me")).status).toBe(401);

  adminPage.once("dialog", (dialog) => void dialog.accept());
  await row(adminPage, target.email).getByRole("button", { name: "Remove" }).click();
  await expect.poll(() => row(adminPage, target.email).count()).toBe(0);

  await adminPage.getByLabel("E-mail address").fill("never@example.test");
  await adminPage.getByRole("button", { name: "Send invitation" }).click();
  const token = invitationToken(await mailbox.latestTo("never@example.test"));
  await row(adminPage, "never@example.test").waitFor();
  adminPage.once("dialog", (dialog) => void dialog.accept());
  await row(adminPage, "never@example.test").getByRole("button", { name: "Revoke" }).click();
  await expect.poll(() => row(adminPage, "never@example.test").count()).toBe(0);
  expect((await cp.app.inject({ method: "POST", url: "/api/v1/invitations/lookup", payload: { token } })).statusCode).toBe(404);

  // Everyone sees their own sessions, this one marked.
  await expect(adminPage.getByRole("table", { name: "Your sessions" }).textContent()).resolves.toContain("This session");
  await screenshot(adminPage, "members");
});
