// An environment's backups in headless Chromium against a real control plane: an admin
// downloads a backup kept in the backup store (links to each file with its SHA-256, and the
// bytes behind them match), deletes it; a project member sees the list without the buttons.
import { createHash, randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { beforeAll, expect, it } from "vitest";
import { createObjectStore } from "@berth/control-plane";
import { addPerson, type Person } from "../support/people.ts";
import { screenshot } from "./browser.ts";
import { dashboardSuite } from "./dashboard-suite.ts";

let admin: Person;
const backupId = randomUUID();
const content = { "db.dump": Buffer.from("PGDMP a database dump"), "manifest.json": Buffer.from('{"format":"berth-backup-1"}\n') };
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const s = dashboardSuite();

beforeAll(async () => {
  admin = await addPerson(s.cp.app, "project_admin", { organizationId: s.d.organization_id, projectId: s.d.project_id });
  // A completed backup whose files are in the control plane's store, as its agent left it.
  const env = s.d.environments.running;
  const key = `backups/${s.d.organization_id}/${env}/${backupId}`;
  const store = createObjectStore({ kind: "local", dir: s.cp.backupDir });
  const stored = [];
  for (const [name, bytes] of Object.entries(content)) {
    const put = await store.put(`${key}/${name}`, Readable.from([bytes]));
    stored.push({ name, size: put.size_bytes, sha256: put.sha256 });
  }
  await s.cp.database.pool.query(
    `insert into backups (id, organization_id, environment_id, deployment_id, comment, status, size_bytes, files, storage, storage_key, stored_files, completed_at)
     values ($1, $2, $3, $4, 'before the upgrade', 'completed', $5, $6, 'local', $7, $8, now())`,
    [backupId, s.d.organization_id, env, randomUUID(), content["db.dump"].length, JSON.stringify(stored.slice(0, 1)), key, JSON.stringify(stored)],
  );
}, 120_000);

/** The environment's page, signed in as `person`, once its backup is listed. */
async function backupsPageFor(person: Person) {
  const page = await s.pageFor(person);
  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  await page.locator(`tr[data-backup-id="${backupId}"]`).waitFor();
  return page;
}

it("an admin downloads a backup: a link to each file with its SHA-256, whose bytes match", { timeout: 60_000 }, async () => {
  const page = await backupsPageFor(admin);
  const row = page.locator(`tr[data-backup-id="${backupId}"]`);
  await expect(row.textContent()).resolves.toMatch(/completed.*control plane/s);
  await row.getByRole("button", { name: /^Download/ }).click();
  const links = page.locator(".download-panel a.download-link");
  await links.first().waitFor();
  expect(await links.allTextContents()).toEqual(["db.dump", "manifest.json"]);
  await expect(page.locator(".download-panel").textContent()).resolves.toContain(sha(content["db.dump"]));
  await screenshot(page, "backups-download");
  // The browser downloads the file the link names, and it is the stored file.
  const [download] = await Promise.all([page.waitForEvent("download"), links.first().click()]);
  expect(download.suggestedFilename()).toBe("db.dump");
  const saved = await download.createReadStream();
  const chunks: Buffer[] = [];
  for await (const c of saved) chunks.push(c as Buffer);
  expect(sha(Buffer.concat(chunks))).toBe(sha(content["db.dump"]));
});

it("a project member sees the backups without Download or Delete", { timeout: 60_000 }, async () => {
  const page = await backupsPageFor(s.member);
  const row = page.locator(`tr[data-backup-id="${backupId}"]`);
  expect(await row.getByRole("button").count()).toBe(0);
});

it("an admin deletes the backup: gone from the list and from the store", { timeout: 60_000 }, async () => {
  const page = await backupsPageFor(admin);
  page.once("dialog", (dialog) => void dialog.accept());
  await page.locator(`tr[data-backup-id="${backupId}"]`).getByRole("button", { name: /^Delete/ }).click();
  await page.locator(`tr[data-backup-id="${backupId}"]`).waitFor({ state: "detached" });
  await expect(page.getByText("No backups yet.")).toBeDefined();
  const { rows } = await s.cp.database.pool.query("select 1 from backups where id = $1", [backupId]);
  expect(rows).toEqual([]);
});
