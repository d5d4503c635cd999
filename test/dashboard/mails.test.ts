// The Mails section of a staging environment's page in headless Chromium, against a real
// control plane fed by a simulated agent over the real link: the caught mail is listed, and
// one message opens with its HTML in a sandboxed frame where the mail's own script does not
// run and cannot reach the dashboard. Production's page has no Mails section.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import type { Event } from "@berth/protocol";
import { dashboardSuite } from "./dashboard-suite.ts";

const s = dashboardSuite();

it("a member lists a staging environment's caught mail and opens one: its HTML in <iframe sandbox>, its script not run", { timeout: 60_000 }, async () => {
  const staging = s.d.environments.stopped;
  const mail: Event = {
    seq: s.agent.nextSeq++,
    ts: new Date().toISOString(),
    kind: "mail.caught",
    mail_id: randomUUID(),
    environment_id: staging,
    received_at: new Date().toISOString(),
    from: "noreply@acme.example",
    to: ["customer@client.example"],
    subject: "Your invoice INV/2026/0007",
    size: 4096,
    html: '<p id="greeting">Dear <b>Ada</b>,</p><script>document.body.setAttribute("data-ran", "1"); parent.document.title = "pwned";</script>',
    text: "Dear Ada,",
    truncated: false,
    headers: [{ name: "Subject", value: "Your invoice INV/2026/0007" }],
    attachments: [{ filename: "INV_2026_0007.pdf", content_type: "application/pdf", size: 2048 }],
  };
  await s.agent.sendAcked([mail]);

  const page = await s.pageFor(s.member);
  await page.goto(`${s.base}/#/environments/${staging}`);
  await page.getByRole("heading", { name: "Mails" }).waitFor({ timeout: 15_000 });
  const row = page.getByRole("row").filter({ hasText: "customer@client.example" });
  await row.waitFor();
  expect(await row.textContent()).toContain("INV_2026_0007.pdf");
  await page.getByRole("button", { name: "Your invoice INV/2026/0007" }).click();

  const frame = page.locator("iframe.mail-frame");
  await frame.waitFor();
  expect(await frame.getAttribute("sandbox")).toBe("");
  const inside = page.frameLocator("iframe.mail-frame");
  expect(await inside.locator("#greeting b").textContent()).toBe("Ada");
  // The mail's script ran neither in its frame nor against the dashboard.
  expect(await inside.locator("body").getAttribute("data-ran")).toBeNull();
  expect(await page.title()).not.toBe("pwned");
  expect(await page.getByText("INV_2026_0007.pdf (application/pdf, 2.0 KiB)").count()).toBe(1);

  // Production's mail is not caught: its page has no Mails section.
  await page.goto(`${s.base}/#/environments/${s.d.environments.running}`);
  await page.getByRole("heading", { name: /production/ }).first().waitFor();
  expect(await page.getByRole("heading", { name: "Mails" }).count()).toBe(0);
});
