// Stages in the dashboard, in headless Chromium against a real control plane: each
// environment's stage badge on the Projects page, a new environment made with a stage, and
// "Promote to production" on an environment's page, which asks what the current production
// becomes; the production's own page offers no promotion and no stage select; the project
// settings that make pushes create development environments (server and limit); a staging
// environment made on another server and set to refresh from production on every push.
import { expect, it } from "vitest";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const s = dashboardSuite();

async function stageOf(envId: string): Promise<string> {
  const { rows } = await s.cp.database.pool.query<{ stage: string }>("select stage from environments where id = $1", [envId]);
  return rows[0]!.stage;
}

it("shows each stage, creates a development environment and promotes staging, the old production becoming development", { timeout: 90_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  const stageCell = (envId: string) => page.locator(`tr[data-environment-id="${envId}"] td.stage .badge`);
  await stageCell(s.d.environments.running).waitFor();
  expect(await stageCell(s.d.environments.running).textContent()).toBe("production");
  expect(await stageCell(s.d.environments.running).getAttribute("class")).toContain("badge-stage_production");
  expect(await stageCell(s.d.environments.stopped).textContent()).toBe("staging");

  const card = page.locator("section.project", { has: page.getByRole("heading", { name: /^Demo ERP/ }) });
  await card.getByText("New environment", { exact: true }).click();
  const form = card.getByRole("form", { name: "New environment of Demo ERP" });
  await form.getByLabel("Environment name").fill("feature");
  await form.getByLabel("Stage").selectOption("development");
  await form.getByRole("button", { name: "Create environment" }).click();
  const feature = card.locator("tr", { has: page.getByRole("link", { name: "feature" }) });
  await feature.waitFor();
  expect(await feature.locator("td.stage").textContent()).toBe("development");
  await screenshot(page, "stages-projects");

  // The production's page: its stage, no promotion, no stage to choose.
  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  await page.locator("#stage .badge").waitFor();
  expect(await page.locator("#stage").textContent()).toBe("production");
  await page.getByRole("form", { name: "Settings of production" }).waitFor();
  expect(await page.getByText("Promote to production", { exact: true }).count()).toBe(0);
  expect(await page.getByRole("form", { name: "Settings of production" }).getByLabel("Stage").count()).toBe(0);

  // Staging's page: promoted, and production becomes development as asked.
  await page.goto(`${s.base}/#/environments/${s.d.environments.stopped}`);
  await page.locator("#stage .badge").waitFor();
  expect(await page.locator("#stage").textContent()).toBe("staging");
  await page.getByText("Promote to production", { exact: true }).click();
  const promote = page.getByRole("form", { name: "Promote staging to production" });
  await promote.getByLabel("production (the current production) becomes").selectOption("development");
  await screenshot(page, "stages-promote");
  await promote.getByRole("button", { name: "Promote staging to production" }).click();
  await expect.poll(() => page.locator("#stage").textContent()).toBe("production");
  expect(await page.locator("#alerts").textContent()).toBe("");
  expect(await stageOf(s.d.environments.stopped)).toBe("production");
  expect(await stageOf(s.d.environments.running)).toBe("development");
  expect(await page.getByText("Promote to production", { exact: true }).count()).toBe(0);

  // The old production's page: a stage select, set to development.
  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  const settings = page.getByRole("form", { name: "Settings of production" });
  await settings.waitFor();
  expect(await settings.getByLabel("Stage").inputValue()).toBe("development");
  await settings.getByLabel("Stage").selectOption("staging");
  await settings.getByRole("button", { name: "Save settings" }).click();
  await expect.poll(() => stageOf(s.d.environments.running)).toBe("staging");
});

it("sets where pushes make development environments and how many run, in the project's settings; a limit out of range is refused next to its field", { timeout: 90_000 }, async () => {
  const settingsOf = async () => (await s.cp.database.pool.query("select development_server_id, development_limit from projects where id = $1", [s.d.project_id])).rows[0];
  expect(await settingsOf()).toEqual({ development_server_id: null, development_limit: 3 });
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  const card = page.locator("section.project", { has: page.getByRole("heading", { name: /^Demo ERP/ }) });
  await card.getByText("Project settings", { exact: true }).click();
  const form = card.getByRole("form", { name: "Settings of Demo ERP" });
  const server = form.getByLabel("Development environments on push");
  expect(await server.inputValue()).toBe(""); // off
  await server.locator(`option[value="${s.d.server_id}"]`).waitFor({ state: "attached" });
  await server.selectOption(s.d.server_id);
  await form.getByLabel("Development limit").fill("25");
  await form.getByRole("button", { name: "Save project" }).click();
  const limitError = form.locator(".field", { has: page.getByLabel("Development limit") }).locator(".field-error");
  await expect.poll(() => limitError.textContent()).toBe("must be <= 20");
  expect(await settingsOf()).toEqual({ development_server_id: null, development_limit: 3 }); // nothing changed

  await form.getByLabel("Development limit").fill("4");
  await form.getByRole("button", { name: "Save project" }).click();
  await expect.poll(settingsOf).toEqual({ development_server_id: s.d.server_id, development_limit: 4 });
  await page.reload();
  const again = page.locator("section.project", { has: page.getByRole("heading", { name: /^Demo ERP/ }) });
  await again.getByText("Project settings", { exact: true }).click();
  const reloaded = again.getByRole("form", { name: "Settings of Demo ERP" });
  await expect.poll(() => reloaded.getByLabel("Development environments on push").inputValue()).toBe(s.d.server_id);
  expect(await reloaded.getByLabel("Development limit").inputValue()).toBe("4");
  await screenshot(page, "stages-development-settings");

  await reloaded.getByLabel("Development environments on push").selectOption("");
  await reloaded.getByRole("button", { name: "Save project" }).click();
  await expect.poll(settingsOf).toEqual({ development_server_id: null, development_limit: 4 });
});

it("creates a staging environment on another server and sets it to refresh from production on every push", { timeout: 90_000 }, async () => {
  const { rows } = await s.cp.database.pool.query<{ id: string }>(
    "insert into servers (organization_id, name, provider, region, hostname, cpu_cores, ram_mb, disk_gb) values ($1, 'staging-box', 'hetzner', 'fsn1', 'staging-box.example.com', 2, 4096, 40) returning id",
    [s.d.organization_id],
  );
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  const card = page.locator("section.project", { has: page.getByRole("heading", { name: /^Demo ERP/ }) });
  await card.getByText("New environment", { exact: true }).click();
  const form = card.getByRole("form", { name: "New environment of Demo ERP" });
  await form.getByLabel("Environment name").fill("qa");
  await form.getByLabel("Stage").selectOption("staging");
  await form.getByLabel("Server").locator(`option[value="${rows[0]!.id}"]`).waitFor({ state: "attached" });
  await form.getByLabel("Server").selectOption(rows[0]!.id);
  await form.getByRole("button", { name: "Create environment" }).click();
  const qa = card.locator("tr", { has: page.getByRole("link", { name: "qa" }) });
  await qa.waitFor();
  const { rows: made } = await s.cp.database.pool.query<{ id: string; server_id: string; refresh_on_push: boolean }>(
    "select id, server_id, refresh_on_push from environments where project_id = $1 and name = 'qa'",
    [s.d.project_id],
  );
  expect(made[0]).toMatchObject({ server_id: rows[0]!.id, refresh_on_push: false });

  await page.goto(`${s.base}/#/environments/${made[0]!.id}`);
  const settings = page.getByRole("form", { name: "Settings of qa" });
  await settings.waitFor();
  await settings.getByLabel("Refresh from production on every push").check();
  await settings.getByRole("button", { name: "Save settings" }).click();
  const refreshOf = async () => (await s.cp.database.pool.query("select refresh_on_push from environments where id = $1", [made[0]!.id])).rows[0].refresh_on_push as boolean;
  await expect.poll(refreshOf).toBe(true);
  await page.reload();
  await expect.poll(() => page.getByRole("form", { name: "Settings of qa" }).getByLabel("Refresh from production on every push").isChecked()).toBe(true);
});
