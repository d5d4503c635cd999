// A network blip while the dashboard's modules load (Chromium aborts requests in flight
// with ERR_NETWORK_CHANGED when interfaces change, as Docker's do during these very tests)
// must not leave a blank page: the page reloads itself, and says so if it keeps failing.
// Reads that meet a blip are tried again, writes are not (api.js's client); a session that
// ended elsewhere signs the page out.
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

it("signs the page out when its session ended elsewhere, and says so", async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  await page.locator("section.project").first().waitFor();
  const token = await page.evaluate(() => sessionStorage.getItem("berth.session"));
  const out = await fetch(`${s.base}/api/v1/auth/logout`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
  expect(out.ok).toBe(true);
  await page.goto(`${s.base}/#/members`);
  await page.getByLabel("E-mail address").waitFor();
  await expect.poll(() => page.locator("#alerts").textContent()).toMatch(/sign in again/i);
  expect(await page.evaluate(() => sessionStorage.getItem("berth.session"))).toBeNull();
});

it("does not send a write again after a network blip (it may have arrived), and says the control plane could not be reached", async () => {
  const page = await s.pageFor(s.owner);
  let posts = 0;
  await page.route("**/api/v1/organizations/*/projects", async (route) => {
    if (route.request().method() !== "POST") return route.continue();
    posts++;
    return route.abort("internetdisconnected");
  });
  await page.goto(`${s.base}/#/projects`);
  await page.getByText("New project", { exact: true }).click();
  const form = page.getByRole("form", { name: "New project" });
  await form.getByLabel("Server").locator(`option[value="${s.d.server_id}"]`).waitFor({ state: "attached" });
  await form.getByLabel("Project name").fill("Never sent twice");
  await form.getByRole("button", { name: "Create project" }).click();
  await expect.poll(() => page.locator("#alerts").textContent()).toContain("The control plane cannot be reached");
  expect(posts).toBe(1);
});
