// A network blip while the dashboard's modules load (Chromium aborts requests in flight
// with ERR_NETWORK_CHANGED when interfaces change, as Docker's do during these very tests)
// must not leave a blank page: the page reloads itself, and says so if it keeps failing.
// Reads that meet a blip are tried again.
import { expect, it } from "vitest";
import { openPage, openSignIn } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const s = dashboardSuite();

it("reloads once a module failed to load, and comes up", async () => {
  const page = await openPage(s.browser);
  let aborted = 0;
  await page.route("**/assets/projects.js", async (route) => {
    if (aborted++ === 0) return route.abort("internetdisconnected");
    return route.continue();
  });
  await openSignIn(page, s.base);
  expect(aborted).toBeGreaterThanOrEqual(2); // the failed load, then the reload's
  await page.context().close();
});

it("says the dashboard could not be loaded when every try fails", async () => {
  const page = await openPage(s.browser);
  let loads = 0;
  page.on("request", (r) => {
    if (r.resourceType() === "document") loads++;
  });
  await page.route("**/assets/projects.js", (route) => route.abort("internetdisconnected"));
  await page.goto(`${s.base}/`);
  await expect.poll(() => page.getByRole("alert").filter({ hasText: "could not be loaded" }).count(), { timeout: 20_000 }).toBe(1);
  expect(loads).toBe(4); // the first load and three reloads, then no more
  await page.context().close();
});

it("tries a read again after a network blip", async () => {
  const page = await s.pageFor(s.owner);
  let blips = 0;
  await page.route("**/api/v1/organizations/*/projects", async (route) => {
    if (blips++ === 0) return route.abort("internetdisconnected");
    return route.continue();
  });
  await page.goto(`${s.base}/#/projects`);
  await page.locator("section.project").first().waitFor();
  expect(blips).toBe(2);
  expect(await page.locator("#alerts").textContent()).toBe("");
});
