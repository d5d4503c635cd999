// The ERP credentials in headless Chromium against a real control plane: an owner rotates
// the master password and the administrator's password from the environment page and sees
// each new one once (not on the page after a reload; the next deploy command carries them);
// a project member sees no button.
import { expect, it } from "vitest";
import type { SignedCommand } from "@berth/protocol";
import { publicClient } from "../support/http.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const commands: SignedCommand[] = [];
const s = dashboardSuite((cmd) => commands.push(cmd));

it("an owner rotates the master and administrator passwords and sees each once; the next deploy carries them; a member has no button", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
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

  const task = await publicClient(s.cp.app, s.d.api_keys.org_rw).post(`/environments/${s.d.environments.stopped}/deploy`);
  expect(task.status).toBe(202);
  await expect
    .poll(() => commands.find((c) => (c.params as { deployment_id?: string }).deployment_id === task.body.task_id)?.params)
    .toMatchObject({ admin_passwd: password, admin_login: { password: login } });

  const memberPage = await s.pageFor(s.member);
  await memberPage.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  await memberPage.getByRole("heading", { name: /staging/ }).first().waitFor();
  expect(await memberPage.getByRole("button", { name: "Rotate master password" }).count()).toBe(0);
  expect(await memberPage.getByRole("button", { name: "Rotate administrator password" }).count()).toBe(0);
});
