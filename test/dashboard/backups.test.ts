// Backups on the dashboard, in headless Chromium against a real control plane and a simulated
// agent on the real link: an admin reads and changes an environment's backup schedule on its
// page (a member sees it but cannot change it); a backup that fails puts a red mark on the
// environment (its page and the project list) with the agent's reason, and a later backup
// that succeeds clears it.
import { expect, it } from "vitest";
import type { SignedCommand } from "@berth/protocol";
import { publicClient } from "../support/http.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { uploadBackupFiles } from "../support/backup-uploads.ts";
import { waitFor } from "../support/wait.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

/** The agent's answer to the next backup: ok, or a failure with this message. */
let failWith: string | null = null;

function answer(cmd: SignedCommand, agent: SimAgent) {
  if (cmd.type !== "backup") return;
  if (failWith !== null) {
    agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error: { code: "backup_failed", message: failWith } })]);
    return;
  }
  // As an agent does: the files to the backup store, then the result.
  void uploadBackupFiles(s.base, cmd).then((files) => agent.sendEvents([agent.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { files } })]));
}

const s = dashboardSuite(answer);

async function backUp(environmentId: string) {
  const res = await publicClient(s.cp.app, s.d.api_keys.org_rw).post(`/environments/${environmentId}/backups`, {});
  expect(res.status).toBe(202);
  await waitFor(async () => {
    const { rows } = await s.cp.database.pool.query<{ status: string }>("select status from backups where id = $1", [res.body.backup_id]);
    return rows[0]?.status !== "pending";
  }, 10_000);
}

it("an admin changes the backup schedule on the environment page; a member only reads it", { timeout: 60_000 }, async () => {
  const env = s.d.environments.running;
  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${env}`);
  const section = page.locator("section.backup-schedule");
  await section.getByText(/^Daily at \d\d:\d\d UTC; next .*Keeps 7 daily, 4 weekly, 3 monthly\.$/).waitFor();

  await section.getByLabel("Frequency").selectOption("weekly");
  await section.getByLabel("Weekday").selectOption({ label: "Wednesday" });
  await section.getByLabel("Time (UTC)").fill("04:30");
  await section.getByLabel("Daily").fill("5");
  await section.getByLabel("Monthly").fill("12");
  await section.getByRole("button", { name: "Save schedule" }).click();
  await section.getByText(/^Weekly on Wednesday at 04:30 UTC; next .*Keeps 5 daily, 4 weekly, 12 monthly\.$/).waitFor();
  const stored = await publicClient(s.cp.app, s.d.api_keys.org_ro).get(`/environments/${env}/backup-schedule`);
  expect(stored.body).toMatchObject({ enabled: true, frequency: "weekly", weekday: 3, time: "04:30", retention: { daily: 5, weekly: 4, monthly: 12 } });
  await screenshot(page, "backup-schedule");

  // A retention that keeps nothing is refused with the API's own words.
  await section.getByLabel("Daily").fill("0");
  await section.getByLabel("Weekly").fill("0");
  await section.getByLabel("Monthly").fill("0");
  await section.getByRole("button", { name: "Save schedule" }).click();
  await expect.poll(() => page.getByRole("alert").textContent()).toContain("keeps no backup");

  // Turned off.
  await section.getByLabel("Scheduled backups on").uncheck();
  await section.getByLabel("Daily").fill("7");
  await section.getByRole("button", { name: "Save schedule" }).click();
  await section.getByText("Scheduled backups are off.").waitFor();

  const memberPage = await s.pageFor(s.member);
  await memberPage.goto(`${s.base}/#/environments/${env}`);
  await memberPage.locator("section.backup-schedule").getByText("Scheduled backups are off.").waitFor();
  expect(await memberPage.getByRole("button", { name: "Save schedule" }).count()).toBe(0);
});

it("a failed backup puts a red mark on the environment until a later backup succeeds", { timeout: 60_000 }, async () => {
  const env = s.d.environments.running;
  failWith = "pg_dump: disk full";
  await backUp(env);

  const page = await s.pageFor(s.owner);
  await page.goto(`${s.base}/#/environments/${env}`);
  const mark = page.locator("#last-backup .last-backup");
  await mark.waitFor();
  expect(await mark.getAttribute("data-last-backup")).toBe("failed");
  expect(await mark.locator(".badge").textContent()).toBe("backup failed");
  // Red: the style of failures (the badge says it in words too).
  expect(await mark.locator(".badge").getAttribute("class")).toContain("badge-failed");
  expect(await page.locator("#last-backup").textContent()).toContain("pg_dump: disk full");
  await screenshot(page, "backup-failed-mark");

  await page.goto(`${s.base}/#/projects`);
  const row = page.locator(`tr[data-environment-id="${env}"]`);
  await row.waitFor();
  expect(await row.locator(".last-backup").textContent()).toBe("backup failed");
  expect(await page.locator(`tr[data-environment-id="${s.d.environments.stopped}"] .last-backup`).count()).toBe(0);

  failWith = null;
  await backUp(env);
  await page.reload();
  await row.waitFor();
  expect(await row.locator(".last-backup").count()).toBe(0);
  await page.goto(`${s.base}/#/environments/${env}`);
  await page.locator("#last-backup .last-backup").waitFor();
  expect(await page.locator("#last-backup .last-backup").getAttribute("data-last-backup")).toBe("completed");
  expect(await page.locator("#last-backup").textContent()).not.toContain("disk full");
});
