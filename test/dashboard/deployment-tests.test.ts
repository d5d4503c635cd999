// A deployment's module tests on its page, in headless Chromium against a real control
// plane: a development build that recorded one failing and one erroring test shows the
// counts and, unfolded, each test's traceback as Odoo printed it; a deployment without tests
// shows no Tests section.
import { expect, it } from "vitest";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";
import { RECORDED_TESTS } from "../support/recorded-tests.ts";

const s = dashboardSuite();

async function finishedDeploy(tests: unknown): Promise<string> {
  const row = await s.cp.app.services.deployments.requestAction({ organizationId: s.d.organization_id, projectId: null }, s.d.environments.running, "deploy", {
    userId: null,
    apiKeyId: null,
  });
  await s.cp.database.pool.query("update deployments set status = 'success', started_at = now(), completed_at = now(), tests_result = $2 where id = $1", [
    row.id,
    tests === null ? null : JSON.stringify(tests),
  ]);
  return row.id;
}

it("shows the tests' counts and each failing test's traceback; none without tests", { timeout: 60_000 }, async () => {
  const tested = await finishedDeploy(RECORDED_TESTS);
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/deployments/${tested}`);
  const summary = page.locator("#tests-summary");
  await summary.waitFor();
  expect(await summary.textContent()).toBe("3 run, 1 failed, 1 error(s)");
  const failures = page.getByRole("list", { name: "Tests that did not pass" });
  expect(await failures.locator("summary").allTextContents()).toEqual(["ERROR shop_tests: TestOrders.test_errors", "FAIL shop_tests: TestOrders.test_fails"]);
  await failures.getByText("FAIL shop_tests: TestOrders.test_fails").click();
  const traceback = failures.locator("details[open] pre.traceback");
  await traceback.waitFor();
  expect(await traceback.textContent()).toBe(RECORDED_TESTS.failures[1]!.traceback.join("\n"));
  await screenshot(page, "deployment-tests");

  const untested = await finishedDeploy(null);
  await page.goto(`${s.base}/#/deployments/${untested}`);
  await page.locator("#deployment-status .badge").waitFor();
  expect(await page.locator("#deployment-tests").isHidden()).toBe(true);
});

it("a staging environment's settings refuse commits whose tests fail; production's offer no such setting", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  const required = async (envId: string) =>
    (await s.cp.database.pool.query<{ require_passing_tests: boolean }>("select require_passing_tests from environments where id = $1", [envId])).rows[0]!.require_passing_tests;
  // The demo's stopped environment is staging.
  await page.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  const settings = page.getByRole("form", { name: "Settings of staging" });
  await settings.waitFor();
  const box = settings.getByLabel("Refuse a commit whose module tests fail");
  expect(await box.isChecked()).toBe(false);
  await box.check();
  await settings.getByRole("button", { name: "Save settings" }).click();
  await expect.poll(() => required(s.d.environments.stopped)).toBe(true);

  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  const production = page.getByRole("form", { name: "Settings of production" });
  await production.waitFor();
  expect(await production.getByLabel("Deploy on push").count()).toBe(1);
  expect(await production.getByLabel("Refuse a commit whose module tests fail").count()).toBe(0);
});
