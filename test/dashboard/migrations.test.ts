// Migrations on the dashboard, in headless Chromium against a real control plane: an owner
// creates one in the form (refused without consent, in the API's words), uploads a small
// backup (tier 1) and reads the analysis report, chooses the server and configures; a larger
// backup (tier 2 with lowered limits, tus) is paused and resumed, and resumed again after a
// page reload from the server's offset, and the stored SHA-256 is the file's; one whose
// network drops goes on by itself from the server's offset; an import from an HTTPS URL
// shows its bytes as they arrive; a failed analysis shows its error; a member reads but sees
// no way to act. The analysis is a fixed one (the upload flow is under test here).
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import type { CDPSession, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ACME_ANALYSIS, fixedAnalysis } from "../support/fixed-analysis.ts";
import { waitUntil } from "../support/wait.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

const MB = 1024 * 1024;
// Sizes and costs the report shows in binary units and with cents.
const ANALYSIS = {
  ...ACME_ANALYSIS,
  database_size_bytes: 123_456_789,
  filestore_size_bytes: 5 * 1024 ** 3,
  total_size_bytes: 123_456_789 + 5 * 1024 ** 3,
  vendor_equivalent_cost: 90.5,
  monthly_savings: 70.5,
};

const analysis = fixedAnalysis(ANALYSIS);
const NOT_A_BACKUP = 4242;
/** A backup of exactly this size is analysed as one with an Enterprise module. */
const ENTERPRISE_BACKUP = 4343;
const enterpriseAnalysis = fixedAnalysis({ ...ANALYSIS, enterprise_modules: ["web_studio"], standard_modules: ["base", "sale", "web_studio"] });

// An HTTPS server of this test (self-signed, trusted through migrationImport.ca; 127.0.0.1 on
// the operator's allow-list, as the import's API test does) serves a backup to import: half of
// it, then more after a second (so a progress event is written), then the rest when released.
const dir = mkdtempSync(path.join(os.tmpdir(), "berth-dash-migrations-"));
execFileSync("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-keyout", path.join(dir, "k.pem"), "-out", path.join(dir, "c.pem"), "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], { stdio: "ignore" });
const cert = readFileSync(path.join(dir, "c.pem"));
const imported = randomBytes(3 * MB);
let releaseImport: () => void = () => {};
const importHeld = new Promise<void>((r) => (releaseImport = r));
const importServer = https.createServer({ key: readFileSync(path.join(dir, "k.pem")), cert }, (req, res) => {
  if (req.url !== "/exports/acme-erp.zip") return void res.writeHead(404).end();
  res.writeHead(200, { "content-length": imported.length });
  res.write(imported.subarray(0, MB));
  setTimeout(() => {
    res.write(imported.subarray(MB, MB + 1000));
    void importHeld.then(() => res.end(imported.subarray(MB + 1000)));
  }, 1200);
});

const s = dashboardSuite(undefined, {
  // Above 1 MiB is tier 2 (tus, 10 MiB chunks): a file of a few chunks is resumable.
  migrationTiers: { tier_1: 1 * MB, tier_2: 500 * MB, tier_3: 5000 * MB },
  jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 },
  // A backup of exactly NOT_A_BACKUP bytes fails its analysis, as a file that is no ERP backup does.
  analyzeBackup: async (source) => {
    if (source.size === NOT_A_BACKUP) throw new Error("no database dump found in the archive");
    return source.size === ENTERPRISE_BACKUP ? enterpriseAnalysis() : analysis();
  },
  outboundAllow: ["127.0.0.1"],
  migrationImport: { ca: cert },
});

let importOrigin: string;
beforeAll(async () => {
  await new Promise<void>((r) => importServer.listen(0, "127.0.0.1", r));
  importOrigin = `https://127.0.0.1:${(importServer.address() as { port: number }).port}`;
});
afterAll(() => {
  releaseImport();
  importServer.closeAllConnections();
  importServer.close();
  rmSync(dir, { recursive: true, force: true });
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A backup file on disk (a path keeps its lastModified across page reloads, as a user's file does). */
async function backupFile(name: string, size: number) {
  const data = randomBytes(size);
  const file = path.join(dir, name);
  await writeFile(file, data);
  return { file, data };
}

async function createMigration(name: string): Promise<string> {
  const res = await s.owner.api.post("/migrations", { organization_id: s.d.organization_id, source_type: "vendor_paas", project_name: name, data_processing_consent: true });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

const record = async (id: string) => (await s.owner.api.get(`/migrations/${id}`)).body as Record<string, unknown>;

async function waitForStatus(id: string, status: string, timeoutMs = 20_000) {
  await waitUntil(`migration ${status}`, async () => (await record(id)).status === status, { timeoutMs, intervalMs: 100 });
}

/** The server's offset of the page's remembered tus upload (HEAD, as a client resuming asks). */
async function serverOffset(page: Page, id: string): Promise<number> {
  const saved = await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`);
  expect(saved).not.toBeNull();
  const url = (JSON.parse(saved!) as { url: string }).url;
  const res = await fetch(url, { method: "HEAD", headers: { authorization: `Bearer ${s.owner.token}`, "tus-resumable": "1.0.0" } });
  expect(res.status).toBe(200);
  return Number(res.headers.get("upload-offset"));
}

/** The server's offset once it stopped moving (a request cut by a reload may still be landing). */
async function settledOffset(page: Page, id: string): Promise<number> {
  let last = -1;
  for (;;) {
    const now = await serverOffset(page, id);
    if (now === last) return now;
    last = now;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** Slows the page's uploads so a test can pause in the middle of one (Chromium's own throttling), or cuts its network. */
const cdpSessions = new WeakMap<Page, CDPSession>();
async function throttleUploads(page: Page, bytesPerSecond: number, offline = false) {
  let cdp = cdpSessions.get(page);
  if (!cdp) {
    cdp = await page.context().newCDPSession(page);
    cdpSessions.set(page, cdp);
    await cdp.send("Network.enable");
  }
  await cdp.send("Network.emulateNetworkConditions", { offline, latency: 0, downloadThroughput: -1, uploadThroughput: bytesPerSecond });
}

it("an owner creates a migration in the form; without consent the API's refusal is shown", { timeout: 60_000 }, async () => {
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations`);
  await page.getByRole("link", { name: "Migrations", exact: true }).waitFor();
  const form = page.locator("form.migration-form");
  await form.getByLabel("Project name").fill("Acme ERP");
  await form.getByLabel("Where it runs now").selectOption({ label: "Our own servers (on premise)" });
  await form.getByLabel("Git repository of custom modules").fill("https://git.example.com/acme/addons.git");
  await form.getByLabel("Branch").fill("17.0");
  await form.getByRole("button", { name: "Create migration" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("data_processing_consent must be true");

  await form.getByLabel(/I agree that Berth stores and processes the backup/).check();
  await form.getByRole("button", { name: "Create migration" }).click();
  await page.getByRole("heading", { name: "Migration of Acme ERP" }).waitFor();
  const id = /#\/migrations\/([0-9a-f-]{36})$/.exec(page.url())?.[1];
  expect(id).toBeDefined();
  expect(await record(id!)).toMatchObject({ status: "pending", source_type: "on_premise", project_name: "Acme ERP", git_repo_url: "https://git.example.com/acme/addons.git", git_branch: "17.0" });
  expect(await page.locator("#migration-status").textContent()).toContain("waiting for backup");

  await page.goto(`${s.base}/#/migrations`);
  const row = page.locator(`tr[data-migration-id="${id}"]`);
  await row.waitFor();
  expect(await row.textContent()).toContain("Acme ERP");
  expect(await row.textContent()).toContain("0 %");
  await screenshot(page, "migrations-list");
});

it("a small backup is uploaded in one request (tier 1) and its analysis read as a report; then a server is chosen", { timeout: 60_000 }, async () => {
  const id = await createMigration("Small ERP");
  const { file, data } = await backupFile("small.zip", 300_000);
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();

  const report = page.locator("section.analysis-report");
  await report.waitFor({ timeout: 20_000 });
  const stored = await record(id);
  expect(stored).toMatchObject({ status: "analyzed", upload_tier: "tier_1", file_name: "small.zip", sha256: sha(data) });
  const text = (await report.textContent())!;
  for (const shown of ["ERP version17.0", "Database size118 MiB", "File store size5.0 GiB", "Users5", "Partners42", "Modules3", "CPU1 core", "RAM2.0 GB", "Disk20 GB", "Vendor equivalent90.50", "Savings70.50"]) {
    expect(text).toContain(shown);
  }
  expect(await report.locator(".modules-standard li").allTextContents()).toEqual(["base", "sale"]);
  expect(await report.locator(".modules-custom li").allTextContents()).toEqual(["acme_custom"]);
  expect(await page.locator("#migration-status").textContent()).toBe("analysed");
  // Nothing is left to upload once the backup is analysed.
  expect(await page.locator("section.migration-upload").isHidden()).toBe(true);
  await screenshot(page, "migration-analysis");

  // The demo server has room for the recommendation (1 core, 2 GB RAM, 20 GB disk).
  const serverForm = page.locator("form.server-form");
  const choice = serverForm.getByRole("radio");
  expect(await choice.count()).toBe(1);
  expect(await choice.first().getAttribute("value")).toBe(s.d.server_id);
  await choice.first().check();
  await serverForm.getByLabel("Domain").fill("erp.acme.example");
  // A trial copy by default: mail and scheduled actions off.
  expect(await serverForm.getByLabel("Serve it as production").isChecked()).toBe(false);
  await serverForm.getByRole("button", { name: "Use this server" }).click();
  await page.getByRole("button", { name: "Start migration" }).waitFor();
  expect(await record(id)).toMatchObject({ status: "ready", target_vm_id: s.d.server_id, target_domain: "erp.acme.example", production: false });
  await page.locator("form.server-form").getByLabel("Serve it as production").check();
  await page.getByRole("button", { name: "Save server and domain" }).click();
  await waitUntil("production", async () => (await record(id)).production === true, { timeoutMs: 10_000, intervalMs: 100 });
  expect(await page.locator("#migration-status").textContent()).toContain("ready to start");
  await screenshot(page, "migration-configured");
});

it("a tier-2 backup goes by tus: paused and resumed, then resumed after a page reload from the server's offset", { timeout: 120_000 }, async () => {
  const id = await createMigration("Big ERP");
  const size = 34 * MB + 123;
  const { file, data } = await backupFile("big.zip", size);
  const page = await s.pageFor(s.owner);
  // 10 MiB a second: each 10 MiB chunk takes about a second, room to pause inside the upload.
  await throttleUploads(page, 10 * MB);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();
  const pause = page.getByRole("button", { name: "Pause" });
  await pause.waitFor();

  // Pause once the first chunk is on the server.
  await waitUntil("the first chunk", async () => (await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`)) !== null && (await serverOffset(page, id)) >= 10 * MB, { timeoutMs: 30_000, intervalMs: 100 });
  await pause.click();
  await page.getByText(/^Paused at /).waitFor();
  const paused = await serverOffset(page, id);
  expect(paused).toBeGreaterThan(0);
  expect(paused).toBeLessThan(size);
  await new Promise((r) => setTimeout(r, 1500));
  expect(await serverOffset(page, id)).toBe(paused);
  expect((await record(id)).status).toBe("uploading");
  // Paused, the form takes no other file: Resume goes on with this one.
  expect(await page.getByRole("button", { name: "Upload backup" }).isDisabled()).toBe(true);
  await screenshot(page, "migration-upload-paused");

  await page.getByRole("button", { name: "Resume" }).click();
  await waitUntil("the upload to go on", async () => (await serverOffset(page, id)) > paused, { timeoutMs: 30_000, intervalMs: 100 });

  // A reload in the middle of the upload: the page remembers it, and the same file continues.
  await page.reload();
  const beforeReload = await settledOffset(page, id);
  expect(beforeReload).toBeGreaterThan(paused);
  expect(beforeReload).toBeLessThan(size);
  await page.getByText("An upload of big.zip was interrupted").waitFor();
  const patches: number[] = [];
  const inits: string[] = [];
  page.on("request", (req) => {
    if (req.method() === "PATCH") patches.push(Number(req.headers()["upload-offset"]));
    if (req.url().includes("/upload/init")) inits.push(req.url());
  });
  await throttleUploads(page, 20 * MB);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();

  await waitForStatus(id, "analyzed", 60_000);
  // It continued where the server stood, without a new upload (no init, first PATCH at that offset).
  expect(inits).toEqual([]);
  expect(patches[0]).toBe(beforeReload);
  expect(await record(id)).toMatchObject({ upload_tier: "tier_2", sha256: sha(data), file_size_bytes: size });
  await page.locator("section.analysis-report").waitFor();
  expect(await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`)).toBeNull();
});

it("a tus upload whose connection drops asks the server's offset and goes on by itself", { timeout: 120_000 }, async () => {
  const id = await createMigration("Flaky ERP");
  const size = 22 * MB + 7;
  const { file, data } = await backupFile("flaky.zip", size);
  const page = await s.pageFor(s.owner);
  await throttleUploads(page, 10 * MB);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();
  await waitUntil("the first chunk", async () => (await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`)) !== null && (await serverOffset(page, id)) >= 10 * MB, { timeoutMs: 30_000, intervalMs: 100 });

  // The network goes away mid-chunk: the page says it will try again, and does once it is back.
  await throttleUploads(page, 10 * MB, true);
  await page.getByText(/^The connection to the control plane was lost\. Trying again in \d+ s…$/).waitFor({ timeout: 15_000 });
  const heads: string[] = [];
  page.on("request", (req) => {
    if (req.method() === "HEAD") heads.push(req.url());
  });
  await throttleUploads(page, 20 * MB);
  await waitForStatus(id, "analyzed", 60_000);
  expect(heads.length).toBeGreaterThan(0);
  expect(await record(id)).toMatchObject({ upload_tier: "tier_2", sha256: sha(data), file_size_bytes: size });
});

it("an upload of a migration cancelled meanwhile (paused, or while sending) ends in words, not in endless tries", { timeout: 60_000 }, async () => {
  const id = await createMigration("Cancelled upload");
  const { file } = await backupFile("cancelled.zip", 12 * MB);
  const page = await s.pageFor(s.owner);
  await throttleUploads(page, 5 * MB);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();
  await waitUntil("the upload", async () => (await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`)) !== null, { timeoutMs: 30_000, intervalMs: 100 });
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByText(/^Paused at /).waitFor();
  expect((await s.owner.api.post(`/migrations/${id}/cancel`)).status).toBe(200);

  await page.getByRole("button", { name: "Resume" }).click();
  await expect.poll(() => page.locator("#alerts").textContent()).toContain("The unfinished upload is no longer on the server; start the upload again.");
  expect(await page.evaluate((key) => localStorage.getItem(key), `berth.migration-upload.${id}`)).toBeNull();
  expect(await page.getByText(/Trying again/).count()).toBe(0);
  expect((await record(id)).status).toBe("cancelled");

  // Cancelled while a chunk is on its way: the API's refusal of the next one is final too.
  const other = await createMigration("Cancelled while sending");
  const sending = await s.pageFor(s.owner);
  await throttleUploads(sending, 2 * MB);
  await sending.goto(`${s.base}/#/migrations/${other}`);
  await sending.getByLabel("Backup file").setInputFiles(file);
  await sending.getByRole("button", { name: "Upload backup" }).click();
  // The first chunk (10 MiB at 2 MB/s) is partly on the server when the migration is cancelled.
  await waitUntil("part of the first chunk", async () => Number((await record(other)).bytes_received) > 0, { timeoutMs: 30_000, intervalMs: 100 });
  expect((await s.owner.api.post(`/migrations/${other}/cancel`)).status).toBe(200);
  await expect.poll(() => sending.locator("#alerts").textContent(), { timeout: 20_000 }).toContain("is cancelled: call upload/init first");
  await new Promise((r) => setTimeout(r, 1500));
  expect(await sending.getByText(/Trying again/).count()).toBe(0);
  expect(await sending.getByRole("button", { name: "Upload backup" }).isEnabled()).toBe(true);
});

it("an import from an HTTPS URL shows the bytes received as they arrive, then the analysis; an HTTP URL is refused in the API's words", { timeout: 60_000 }, async () => {
  const id = await createMigration("Imported ERP");
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup URL").fill("http://backups.example.com/acme.zip");
  await page.getByRole("button", { name: "Import from URL" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("cloud_url must use HTTPS");
  expect((await record(id)).status).toBe("pending");

  await page.getByLabel("Backup URL").fill(`${importOrigin}/exports/acme-erp.zip`);
  await page.getByRole("button", { name: "Import from URL" }).click();
  await page.locator("#migration-status").getByText("importing").waitFor();
  // Held after the first MiB and a bit: what the events said arrived is on the page.
  const received = page.locator("#migration-received");
  await expect.poll(() => received.textContent(), { timeout: 15_000 }).toMatch(/^1\.0 MiB received$/);
  expect(await record(id)).toMatchObject({ status: "importing", file_name: "acme-erp.zip", bytes_received: MB + 1000 });
  await screenshot(page, "migration-importing");

  releaseImport();
  await page.locator("section.analysis-report").waitFor({ timeout: 20_000 });
  expect(await record(id)).toMatchObject({ status: "analyzed", upload_tier: "import", sha256: sha(imported) });
});

it("the report says what the migration needs and what is missing: Enterprise add-ons absent, then met once the organisation adds the repository", { timeout: 60_000 }, async () => {
  const id = await createMigration("Studio ERP");
  const { file } = await backupFile("studio.zip", ENTERPRISE_BACKUP);
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();
  const report = page.locator("section.analysis-report");
  await report.waitFor({ timeout: 20_000 });
  const enterprise = report.locator('li.requirement[data-code="enterprise_addons_required"]');
  expect(await enterprise.getAttribute("class")).toContain("requirement-unmet");
  // The API's own words: which modules, and what to do.
  expect(await enterprise.textContent()).toMatch(/Not met: .*web_studio.*add the vendor's Enterprise repository/);
  expect(await report.locator(".requirements-unmet").textContent()).toBe("One requirement is not met: the migration cannot start until it is.");
  await screenshot(page, "migration-requirements-unmet");

  const repo = await s.owner.api.post(`/organizations/${s.d.organization_id}/addon-repositories`, { git_url: "https://git.example.com/odoo/enterprise.git", branch: "17.0", name: "enterprise-17" });
  expect(repo.status).toBe(201);
  await page.reload();
  await report.waitFor({ timeout: 20_000 });
  expect(await enterprise.getAttribute("class")).toContain("requirement-met");
  expect(await enterprise.textContent()).toContain("the add-on repository enterprise-17");
  expect(await report.locator(".requirements-unmet").count()).toBe(0);
  await s.owner.api.delete(`/organizations/${s.d.organization_id}/addon-repositories/${repo.body.id as string}`);
});

it("a failed analysis shows its error_message; Retry analyses the backup again", { timeout: 60_000 }, async () => {
  const id = await createMigration("Broken ERP");
  const { file } = await backupFile("broken.zip", NOT_A_BACKUP);
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByLabel("Backup file").setInputFiles(file);
  await page.getByRole("button", { name: "Upload backup" }).click();
  const error = page.locator("p.error-text");
  await error.waitFor({ timeout: 20_000 });
  expect(await error.textContent()).toBe("Error: Analysis failed: no database dump found in the archive");
  expect(await page.locator("#migration-status").textContent()).toContain("failed");
  expect(await page.locator("section.analysis-report").count()).toBe(0);
  await screenshot(page, "migration-analysis-failed");

  await page.getByRole("button", { name: "Retry" }).click();
  await waitUntil("the analysis again", async () => (await record(id)).retry_count === 1 && (await record(id)).status === "failed", { timeoutMs: 20_000, intervalMs: 100 });
  await page.getByRole("button", { name: "Retry" }).waitFor();
  expect(await error.textContent()).toBe("Error: Analysis failed: no database dump found in the archive");
});

it("a member sees the migrations and their analysis but no way to create, upload, configure or start", { timeout: 60_000 }, async () => {
  const id = await createMigration("Seen by members");
  const page = await s.pageFor(s.member);
  await page.goto(`${s.base}/#/migrations`);
  await page.locator(`tr[data-migration-id="${id}"]`).waitFor();
  expect(await page.locator("form.migration-form").count()).toBe(0);
  expect(await page.getByRole("button", { name: "Create migration" }).count()).toBe(0);

  await page.goto(`${s.base}/#/migrations/${id}`);
  await page.getByRole("heading", { name: "Migration of Seen by members" }).waitFor();
  expect(await page.locator("section.migration-upload").count()).toBe(0);
  expect(await page.locator(".migration-actions button").count()).toBe(0);

  // Analysed meanwhile (the owner uploaded it): the open page follows the live events to the
  // report, which the member reads; no server to choose.
  const data = randomBytes(10_000);
  expect((await s.owner.api.post(`/migrations/${id}/upload/init?file_name=erp.zip&file_size=${data.length}&sha256=${sha(data)}`)).status).toBe(200);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(data)]), "erp.zip");
  expect((await fetch(`${s.base}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${s.owner.token}` }, body: form })).status).toBe(200);
  await page.locator("section.analysis-report").waitFor({ timeout: 20_000 });
  expect(await page.locator("section.analysis-report").textContent()).toContain("ERP version17.0");
  expect(await page.locator("form.server-form").count()).toBe(0);
  expect(await page.locator(".migration-actions button").count()).toBe(0);
  await screenshot(page, "migration-member");
});
