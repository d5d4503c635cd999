// A migration run followed on the dashboard, in headless Chromium against a real control plane
// and a simulated agent on the real link: Start on the migration's page, the 12 steps shown
// with their states and the progress bar moving on migration_progress events while the agent
// restores the backup (held at restoring_database so the running state can be seen), then the
// Open link to environment_url and the environment's page; a run that fails shows its
// error_message and Retry makes it ready to start again; Cancel stops a run and Delete
// removes the migration.
import { createHash, randomBytes } from "node:crypto";
import type { Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { DEPLOY_STEP_IDS, MIGRATION_RESTORE_PHASES, type SignedCommand } from "@berth/protocol";
import { fixedAnalysis } from "../support/fixed-analysis.ts";
import { useTestImages } from "../support/real-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { waitUntil } from "../support/wait.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const STEP_IDS = [
  "creating_project",
  "creating_environment",
  "deploying_containers",
  "downloading_backup",
  "extracting_backup",
  "restoring_database",
  "restoring_filestore",
  "cloning_repository",
  "configuring_routing",
  "restarting_container",
  "verifying_health",
  "completed",
];

/** The restore phase the agent's next migration deploy fails at, if any. */
let failAt: string | null = null;
/** Opened by the test to let the agent go on past restoring_database. */
let release: () => void = () => {};
let gate: Promise<void> = Promise.resolve();

function answer(cmd: SignedCommand, agent: SimAgent) {
  const params = cmd.params as { deployment_id?: string; archive?: { migration_id: string } };
  if (cmd.type !== "deploy" || !params.archive || !params.deployment_id) return;
  void runDeploy(cmd, agent, params.deployment_id);
}

/** As an agent restoring a migration's backup reports it: steps, the restore phases as logs of starting_container, the result. */
async function runDeploy(cmd: SignedCommand, a: SimAgent, deployment_id: string) {
  const send = (body: Record<string, unknown>) => a.sendEvents([a.event({ command_id: cmd.command_id, ...body })]);
  for (const step of DEPLOY_STEP_IDS) {
    send({ kind: "step.started", deployment_id, step });
    if (step === "starting_container") {
      for (const phase of MIGRATION_RESTORE_PHASES) {
        send({ kind: "log", deployment_id, level: "info", message: `migration: ${phase}`, step, data: phase === "restoring_filestore" ? { migration_step: phase, skipped: true } : { migration_step: phase } });
        if (phase === "restoring_database") await gate;
        if (phase === failAt) {
          const error = { code: "restore_failed", message: "pg_restore: could not read the dump" };
          send({ kind: "step.failed", deployment_id, step, error });
          send({ kind: "command.result", ok: false, error });
          return;
        }
      }
    }
    send({ kind: "step.finished", deployment_id, step });
  }
  send({ kind: "command.result", ok: true, result: { container_id: "c0ffee", container_name: "berth-erp", image: "berth-test/erp:17.0", healthy: true, migration_restore: { format: "zip", files: 3 } } });
}

const s = dashboardSuite(answer, { jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 }, analyzeBackup: fixedAnalysis({ recommended_cpu: 1, recommended_ram_mb: 1024, recommended_disk_gb: 10 }) });

// The ERP images the run deploys (the suite's beforeAll has started the control plane).
beforeAll(async () => {
  await useTestImages(s.cp);
});

const record = async (id: string) => (await s.owner.api.get(`/migrations/${id}`)).body as Record<string, unknown> & { steps?: { id: string; status: string }[] };

/** A migration whose backup is uploaded, analysed and configured on the demo server: ready to start. */
async function readyMigration(name: string): Promise<string> {
  const created = await s.owner.api.post("/migrations", { organization_id: s.d.organization_id, source_type: "vendor_paas", project_name: name, data_processing_consent: true });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  const data = randomBytes(50_000);
  const sha256 = createHash("sha256").update(data).digest("hex");
  expect((await s.owner.api.post(`/migrations/${id}/upload/init?file_name=erp.zip&file_size=${data.length}&sha256=${sha256}`)).status).toBe(200);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(data)]), "erp.zip");
  const up = await fetch(`${s.base}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${s.owner.token}` }, body: form });
  expect(up.status).toBe(200);
  await waitUntil("the analysis", async () => (await record(id)).status === "analyzed", { timeoutMs: 20_000, intervalMs: 100 });
  expect((await s.owner.api.post(`/migrations/${id}/configure`, { target_vm_id: s.d.server_id, target_domain: `${name.toLowerCase().replace(/\W+/g, "-")}.example.com` })).status).toBe(200);
  return id;
}

/** Clicks Start; the API's refusal (e.g. 409 before the run exists) fails the test in its own words. */
async function start(page: Page, id: string) {
  await page.getByRole("button", { name: "Start migration" }).click();
  const alert = page.locator("#alerts");
  await waitUntil("the start", async () => (await record(id)).status !== "ready" || ((await alert.textContent()) ?? "") !== "", { timeoutMs: 15_000, intervalMs: 100 });
  expect(await alert.textContent()).toBe("");
}

it("Start runs the 12 steps, followed live on the page, and a completed migration links to its ERP", { timeout: 120_000 }, async () => {
  failAt = null;
  gate = new Promise((r) => (release = r));
  const id = await readyMigration("Live ERP");
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await start(page, id);

  // Held at restoring_database: the steps before it are done, it runs, the rest wait.
  const steps = page.locator("section.migration-steps ol.steps > li");
  await page.locator('li[data-step="restoring_database"].step-running').waitFor({ timeout: 30_000 });
  expect(await steps.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.step))).toEqual(STEP_IDS);
  for (const done of ["creating_project", "creating_environment", "deploying_containers", "downloading_backup", "extracting_backup"]) {
    expect(await page.locator(`li[data-step="${done}"]`).getAttribute("class")).toContain("step-completed");
  }
  expect(await page.locator('li[data-step="verifying_health"]').getAttribute("class")).toContain("step-pending");
  const running = await record(id);
  expect(running.status).toBe("processing");
  expect(await page.locator("#migration-status").textContent()).toContain("migrating");
  const bar = page.getByRole("progressbar", { name: "Migration progress" });
  expect(Number(await bar.getAttribute("value"))).toBe(running.progress_percent);
  expect(running.progress_percent).toBeGreaterThanOrEqual(40);
  expect(running.progress_percent).toBeLessThan(100);
  // Cancel is offered while it runs.
  await page.getByRole("button", { name: "Cancel migration" }).waitFor();
  await screenshot(page, "migration-progress");

  release();
  await page.locator('li[data-step="completed"].step-completed').waitFor({ timeout: 30_000 });
  const done = await record(id);
  expect(done).toMatchObject({ status: "completed", progress_percent: 100 });
  expect(done.environment_url).toMatch(/^https:\/\//);
  expect(await page.locator('li[data-step="restoring_filestore"]').getAttribute("class")).toContain("step-skipped");
  const open = page.getByRole("link", { name: /^Open/ });
  await open.waitFor();
  expect(await open.getAttribute("href")).toBe(done.environment_url);
  expect(await open.textContent()).toContain((done.environment_url as string).replace(/^https:\/\//, ""));
  expect(await page.getByRole("link", { name: "Environment page" }).getAttribute("href")).toBe(`#/environments/${done.environment_id as string}`);
  expect(await page.getByRole("button", { name: "Cancel migration" }).count()).toBe(0);
  await screenshot(page, "migration-completed");
});

it("a run that fails shows its error_message; Retry makes it ready to start again", { timeout: 120_000 }, async () => {
  failAt = "restoring_database";
  gate = Promise.resolve();
  const id = await readyMigration("Failing ERP");
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await start(page, id);
  await page.locator("#migration-status").getByText("failed").waitFor({ timeout: 30_000 });
  const failed = await record(id);
  expect(failed.status).toBe("failed");
  expect(failed.error_message).toBeTruthy();
  expect(await page.locator("p.error-text").textContent()).toBe(`Error: ${failed.error_message as string}`);
  expect(await page.locator('li[data-step="restoring_database"]').getAttribute("class")).toContain("step-failed");
  await screenshot(page, "migration-failed");

  failAt = null;
  await page.getByRole("button", { name: "Retry" }).click();
  await page.getByRole("button", { name: "Start migration" }).waitFor();
  expect(await record(id)).toMatchObject({ status: "ready", retry_count: 1 });
});

it("Cancel stops a running migration; Delete then removes it from the list", { timeout: 120_000 }, async () => {
  failAt = null;
  gate = new Promise((r) => (release = r));
  const id = await readyMigration("Cancelled ERP");
  const page = await s.pageFor(s.owner);
  page.on("dialog", (dialog) => void dialog.accept());
  await page.goto(`${s.base}/#/migrations/${id}`);
  await start(page, id);
  await page.locator('li[data-step="restoring_database"].step-running').waitFor({ timeout: 30_000 });

  await page.getByRole("button", { name: "Cancel migration" }).click();
  await page.locator("#migration-status").getByText("cancelled").waitFor({ timeout: 15_000 });
  expect((await record(id)).status).toBe("cancelled");
  expect(await page.getByRole("button", { name: "Cancel migration" }).count()).toBe(0);
  release();

  await page.getByRole("button", { name: "Delete" }).click();
  await page.getByRole("heading", { name: "Migrations", exact: true }).waitFor();
  expect((await s.owner.api.get(`/migrations/${id}`)).status).toBe(404);
  await page.locator("table").waitFor();
  expect(await page.locator(`tr[data-migration-id="${id}"]`).count()).toBe(0);
});
