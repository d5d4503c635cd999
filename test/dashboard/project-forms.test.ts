// The Projects page makes and changes what the API makes and changes, driven in Chromium
// against a real control plane and a simulated agent on the real link: a new project on
// the organisation's server, a sized environment with its domain, its deployment followed
// live to its end, the environment's settings changed, the project renamed, and the API's
// own messages when a value or an action is refused (a field's next to the field).
import { expect, it } from "vitest";
import { DEPLOY_STEP_IDS, type SignedCommand } from "@berth/protocol";
import { useTestImages } from "../support/real-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

/** As an agent reports a deploy: each step started and finished, then the result. */
function answer(cmd: SignedCommand, agent: SimAgent) {
  const deploymentId = (cmd.params as { deployment_id?: string }).deployment_id;
  if (cmd.type !== "deploy" || !deploymentId) return;
  const send = (body: Record<string, unknown>) => agent.sendEvents([agent.event({ command_id: cmd.command_id, ...body })]);
  void (async () => {
    for (const step of DEPLOY_STEP_IDS) {
      send({ kind: "step.started", deployment_id: deploymentId, step });
      send({ kind: "log", deployment_id: deploymentId, level: "info", message: `doing ${step}`, step });
      await new Promise((r) => setTimeout(r, 100));
      send({ kind: "step.finished", deployment_id: deploymentId, step });
    }
    send({ kind: "command.result", ok: true, result: { container_id: "c0ffee", container_name: "berth-erp", image: "berth-test/erp:17.0", healthy: true } });
  })();
}

const s = dashboardSuite(answer);

it("creates a project and a sized environment from the Projects page, deploys it and sees it live", { timeout: 120_000 }, async () => {
  await useTestImages(s.cp);
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/projects`);
  const alert = page.locator("#alerts");

  // A refused value: the API's message, nothing created.
  await page.getByText("New project", { exact: true }).click();
  const form = page.getByRole("form", { name: "New project" });
  await form.getByLabel("Server").locator(`option[value="${s.d.server_id}"]`).waitFor({ state: "attached" });
  await form.getByRole("button", { name: "Create project" }).click();
  await expect.poll(() => alert.textContent()).toMatch(/name/);
  await form.getByLabel("Project name").fill("Bakery");
  await form.getByLabel("ERP version").fill("12.0");
  await form.getByRole("button", { name: "Create project" }).click();
  await expect.poll(() => alert.textContent()).toContain('ERP version "12.0" is not supported');

  await form.getByLabel("ERP version").fill("17.0");
  await form.getByLabel("Server").selectOption(s.d.server_id);
  await form.getByRole("button", { name: "Create project" }).click();
  const card = page.locator("section.project", { has: page.getByRole("heading", { name: /^Bakery/ }) });
  await card.waitFor();
  const project = (await s.owner.api.get(`/organizations/${s.d.organization_id}/projects`)).body.data.find((p: { name: string }) => p.name === "Bakery");
  expect(project).toMatchObject({ erp_version: "17.0", default_branch: "main", environments: [] });

  // A sized environment, then its deployment.
  await card.getByText("New environment", { exact: true }).click();
  const envForm = card.getByRole("form", { name: "New environment of Bakery" });
  await envForm.getByLabel("Environment name").fill("production");
  await envForm.getByLabel("Memory (MB)").fill("100");
  await envForm.getByRole("button", { name: "Create environment" }).click();
  await expect.poll(() => alert.textContent()).toContain("ram_mb");
  // The API's detail for the field, next to it and tied to it.
  const ramError = envForm.locator(".field", { has: page.getByLabel("Memory (MB)") }).locator(".field-error");
  expect(await ramError.textContent()).toBe("must be >= 256");
  expect(await envForm.getByLabel("Memory (MB)").getAttribute("aria-invalid")).toBe("true");
  expect(await envForm.getByLabel("Memory (MB)").getAttribute("aria-describedby")).toContain(await ramError.getAttribute("id"));
  await screenshot(page, "environment-form-refused");
  await envForm.getByLabel("Memory (MB)").fill("3072");
  await envForm.getByLabel("CPU cores").fill("2");
  await envForm.getByLabel("Disk (GB)").fill("30");
  await envForm.getByLabel("ERP workers").fill("3");
  await envForm.getByLabel("Domain").fill("erp.bakery.example.com");
  await envForm.getByLabel("Aliases").fill("www.bakery.example.com, shop.bakery.example.com");
  await envForm.getByRole("button", { name: "Create environment" }).click();
  const row = card.locator("tr", { has: page.getByRole("link", { name: "production" }) });
  await row.waitFor();
  expect(await alert.textContent()).toBe(""); // the earlier refusal is gone once it went through
  expect(await envForm.locator(".field-error").count()).toBe(0);
  expect(await row.locator(".badge").first().textContent()).toBe("pending");
  const env = (await s.owner.api.get(`/organizations/${s.d.organization_id}/projects`)).body.data.find((p: { name: string }) => p.name === "Bakery").environments[0];
  expect(env).toMatchObject({ name: "production", cpu_cores: 2, ram_mb: 3072, disk_gb: 30, git_branch: "main", auto_deploy: false, domain: "erp.bakery.example.com", aliases: ["www.bakery.example.com", "shop.bakery.example.com"] });
  const { rows } = await s.cp.database.pool.query<{ workers: number }>("select workers from environments where id = $1", [env.id]); // not in the platform API's view
  expect(rows[0]?.workers).toBe(3);
  await screenshot(page, "project-forms");

  await row.getByRole("button", { name: "Deploy Bakery production" }).click();
  await page.waitForURL(/#\/deployments\/[0-9a-f-]{36}$/);
  await expect.poll(() => page.locator("#deployment-status").textContent(), { timeout: 60_000 }).toBe("success");
  expect(await page.locator("ol.steps > li").count()).toBeGreaterThan(3);
  await page.goto(`${s.base}/#/projects`);
  const liveRow = page.locator("section.project", { has: page.getByRole("heading", { name: /^Bakery/ }) }).locator("tr", { has: page.getByRole("link", { name: "production" }) });
  await expect.poll(() => liveRow.locator(".badge").first().textContent(), { timeout: 30_000 }).toBe("running");

  // Its settings, on its page: what the environment's PATCH takes, kept across a reload.
  await liveRow.getByRole("link", { name: "production", exact: true }).click();
  const settings = page.getByRole("form", { name: "Settings of production" });
  expect(await settings.getByLabel("Domain", { exact: true }).inputValue()).toBe("erp.bakery.example.com");
  await settings.getByLabel("Branch").fill("bad branch");
  await settings.getByRole("button", { name: "Save settings" }).click();
  await expect.poll(() => alert.textContent()).toContain("git_branch");
  const branchError = settings.locator(".field", { has: page.getByLabel("Branch") }).locator(".field-error");
  expect(await branchError.textContent()).toMatch(/^must match pattern /);
  await settings.getByLabel("Branch").fill("release/2026");
  await settings.getByLabel("Deploy on push").check();
  await settings.getByLabel("Domain", { exact: true }).fill("Bakery.Example.com");
  await settings.getByLabel("Aliases").fill("www.bakery.example.com");
  await settings.getByLabel("Memory (MB)").fill("6144");
  await settings.getByLabel("CPU cores").fill("3");
  await settings.getByRole("button", { name: "Save settings" }).click();
  await expect.poll(() => page.locator("dl.facts").textContent()).toContain("release/2026");
  expect(await alert.textContent()).toBe("");
  await page.reload();
  const facts = page.locator("dl.facts");
  await facts.waitFor();
  const fact = (name: string) => facts.locator(`dt:text-is("${name}") + dd`).textContent();
  expect(await fact("Branch")).toBe("release/2026");
  expect(await fact("Deploy on push")).toBe("yes");
  expect(await fact("Aliases")).toBe("www.bakery.example.com");
  expect(await fact("Resources")).toBe("3 cores · 6.0 GB RAM · 30 GB disk");
  const reloaded = page.getByRole("form", { name: "Settings of production" });
  expect(await reloaded.getByLabel("Domain", { exact: true }).inputValue()).toBe("bakery.example.com");
  expect(await reloaded.getByLabel("Deploy on push").isChecked()).toBe(true);
  const changed = (await s.owner.api.get(`/organizations/${s.d.organization_id}/projects`)).body.data.find((p: { name: string }) => p.name === "Bakery").environments[0];
  expect(changed).toMatchObject({ git_branch: "release/2026", auto_deploy: true, domain: "bakery.example.com", aliases: ["www.bakery.example.com"], cpu_cores: 3, ram_mb: 6144, status: "running" });
  expect(await reloaded.getByLabel("Memory (MB)").inputValue()).toBe("6144");
  await screenshot(page, "environment-settings");
  await page.goto(`${s.base}/#/projects`);

  // Renamed, with another branch and a repository (what the project's PATCH takes); and
  // deleting it while its environment runs is refused in the API's words.
  const live = page.locator("section.project", { has: page.getByRole("heading", { name: /^Bakery/ }) });
  await live.getByText("Project settings", { exact: true }).click();
  await live.getByLabel("Project name").fill("Bakery & Co");
  await live.getByLabel("Default branch").fill("develop");
  await live.getByLabel("Repository URL").fill("https://github.com/acme/bakery.git");
  await live.getByRole("button", { name: "Save project" }).click();
  await page.getByRole("heading", { name: /^Bakery & Co/ }).waitFor();
  const saved = (await s.owner.api.get(`/organizations/${s.d.organization_id}/projects`)).body.data.find((p: { id: string }) => p.id === project.id);
  expect(saved).toMatchObject({ name: "Bakery & Co", default_branch: "develop", git_repo_url: "https://github.com/acme/bakery.git" });
  await page.reload();
  const renamed = page.locator("section.project", { has: page.getByRole("heading", { name: /^Bakery & Co/ }) });
  await renamed.getByText("Project settings", { exact: true }).click();
  expect(await renamed.getByLabel("Default branch").inputValue()).toBe("develop");
  expect(await renamed.getByLabel("Repository URL").inputValue()).toBe("https://github.com/acme/bakery.git");
  page.once("dialog", (d) => void d.accept());
  await renamed.getByRole("button", { name: "Delete project" }).click();
  await expect.poll(() => alert.textContent()).toContain("running or deploying");
});

it("a project member sees neither the new project form nor the environment form", async () => {
  const page = await s.pageFor(s.member);
  await page.goto(`${s.base}/#/projects`);
  await page.locator("section.project").first().waitFor();
  expect(await page.getByText("New project", { exact: true }).count()).toBe(0);
  expect(await page.getByText("New environment", { exact: true }).count()).toBe(0);
  expect(await page.getByText("Project settings", { exact: true }).count()).toBe(0);
});
