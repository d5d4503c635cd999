// "Refresh from production" in the dashboard, in headless Chromium against a real control
// plane: offered on a staging environment's page (not on production's), it asks first (a
// dismissed confirmation starts nothing), then starts one copy operation of production into
// staging and opens that operation's page to follow it.
import { expect, it } from "vitest";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const s = dashboardSuite();

async function operationsOf(envId: string) {
  const { rows } = await s.cp.database.pool.query<{ id: string; kind: string; source: string }>(
    "select id, kind, extra_data->>'source_environment_id' as source from deployments where environment_id = $1 order by created_at",
    [envId],
  );
  return rows;
}

it("refreshes staging from production after a confirmation, and follows the copy", { timeout: 90_000 }, async () => {
  const page = await s.pageFor(s.owner);
  const button = page.getByRole("button", { name: /^Refresh from production/ });

  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  await page.locator("#stage .badge").waitFor();
  expect(await button.count()).toBe(0);

  const staging = s.d.environments.stopped;
  await page.goto(`${s.base}/#/environments/${staging}`);
  await button.waitFor();
  await screenshot(page, "copy-from-button");
  const before = await operationsOf(staging);

  // Dismissed: nothing starts.
  page.once("dialog", (dialog) => void dialog.dismiss());
  await button.click();
  await page.waitForTimeout(300);
  expect(await operationsOf(staging)).toEqual(before);

  let question = "";
  page.once("dialog", (dialog) => {
    question = dialog.message();
    void dialog.accept();
  });
  await button.click();
  await page.waitForURL(/#\/deployments\/[0-9a-f-]{36}$/);
  expect(question).toContain("Replace staging's database and files with a copy of production as it is now?");
  const after = await operationsOf(staging);
  expect(after.slice(before.length).map((o) => [o.kind, o.source])).toEqual([["copy", s.d.environments.running]]);
  expect(page.url()).toContain(`#/deployments/${after.at(-1)!.id}`);
  expect(await page.locator("#alerts").textContent()).toBe("");
});
