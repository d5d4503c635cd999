// The catcher as an ERP meets it: a real SMTP conversation (Nodemailer's client, which
// speaks like Python's smtplib: EHLO, AUTH, MAIL FROM with SIZE, RCPT, DATA) with the real
// server on 127.0.0.1. What it keeps, what it refuses and with which SMTP code.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import nodemailer, { type SendMailOptions } from "nodemailer";
import type { EventInput } from "@berth/protocol";
import { createMailCatcherServer } from "./mail-catcher.ts";
import { mailPassword } from "./mail-credentials.ts";

const STAGING = "7d3c1f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const OTHER = "0f9e8d7c-6b5a-4c3d-8e9f-0a1b2c3d4e5f";
type Caught = Extract<EventInput, { kind: "mail.caught" }>;

let stateDir: string;
let port: number;
let caught: Caught[];
let server: ReturnType<typeof createMailCatcherServer>;
let passwords: Record<string, string>;

beforeAll(async () => {
  stateDir = mkdtempSync(join(tmpdir(), "berth-mail-"));
  passwords = { [STAGING]: await mailPassword(stateDir, STAGING), [OTHER]: await mailPassword(stateDir, OTHER) };
  caught = [];
  server = createMailCatcherServer({ stateDir, emit: (e) => caught.push(e as Caught), maxBytes: 64 * 1024, now: () => new Date("2026-12-01T10:00:00.000Z") });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  rmSync(stateDir, { recursive: true, force: true });
});

const send = (user: string | null, password: string, mail: SendMailOptions) =>
  nodemailer
    .createTransport({ host: "127.0.0.1", port, secure: false, ignoreTLS: true, ...(user === null ? {} : { auth: { user, pass: password } }) })
    .sendMail(mail);

const invoice = {
  from: '"Acme (staging)" <noreply@acme.example>',
  to: "customer@client.example",
  cc: "boss@client.example",
  subject: "Invoice INV/2026/0001",
  text: "Dear customer, your invoice is attached.",
  html: "<p>Dear customer, <b>your invoice</b> is attached.</p><script>alert(1)</script>",
  attachments: [
    { filename: "INV_2026_0001.pdf", content: Buffer.alloc(3000, 1), contentType: "application/pdf" },
    { filename: "terms.txt", content: "Payment in 30 days" },
  ],
};

describe("the mail catcher", () => {
  it("keeps a message sent with an environment's login, parsed: from, envelope recipients, subject, both parts, headers, attachments named and measured", async () => {
    caught.length = 0;
    const info = await send(STAGING, passwords[STAGING]!, invoice);
    expect(info.response).toMatch(/^250 .*Caught as [0-9a-f-]{36}: kept 7 days/);
    expect(caught).toHaveLength(1);
    const mail = caught[0]!;
    expect(mail).toMatchObject({
      kind: "mail.caught",
      environment_id: STAGING,
      received_at: "2026-12-01T10:00:00.000Z",
      from: '"Acme (staging)" <noreply@acme.example>',
      to: ["customer@client.example", "boss@client.example"],
      subject: "Invoice INV/2026/0001",
      text: "Dear customer, your invoice is attached.",
      truncated: false,
      attachments: [
        { filename: "INV_2026_0001.pdf", content_type: "application/pdf", size: 3000 },
        { filename: "terms.txt", content_type: "text/plain", size: 18 },
      ],
    });
    expect(mail.html).toContain("<b>your invoice</b>");
    expect(mail.headers).toContainEqual({ name: "Subject", value: "Invoice INV/2026/0001" });
    expect(mail.size).toBeGreaterThan(3000);
    expect(mail.mail_id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("files the message under the login's environment: another environment's login puts it in that environment's box only", async () => {
    caught.length = 0;
    await send(OTHER, passwords[OTHER]!, { ...invoice, attachments: [] });
    expect(caught.map((m) => m.environment_id)).toEqual([OTHER]);
  });

  it("refuses a wrong password, another environment's password and an unknown or path-like user with 535, and keeps nothing", async () => {
    caught.length = 0;
    const attempts: [string, string][] = [
      [STAGING, "not-the-password"],
      [STAGING, passwords[OTHER]!],
      ["2b1e5a9c-0000-4000-8000-000000000000", passwords[STAGING]!],
      ["../" + STAGING, passwords[STAGING]!],
    ];
    for (const [user, password] of attempts) {
      await expect(send(user, password, invoice)).rejects.toMatchObject({ responseCode: 535 });
    }
    expect(caught).toEqual([]);
  });

  it("refuses mail without AUTH (530): a message always belongs to one environment", async () => {
    caught.length = 0;
    await expect(send(null, "", invoice)).rejects.toMatchObject({ responseCode: 530 });
    expect(caught).toEqual([]);
  });

  it("refuses a message over the size limit with 552 and says the limit, and keeps nothing", async () => {
    caught.length = 0;
    const big = { ...invoice, attachments: [{ filename: "huge.bin", content: Buffer.alloc(80 * 1024, 7) }] };
    const error = await send(STAGING, passwords[STAGING]!, big).catch((e: unknown) => e as { responseCode: number; response: string });
    expect(error).toMatchObject({ responseCode: 552 });
    expect(caught).toEqual([]);
  });

  it("cuts an HTML part past the protocol's bound and says so", async () => {
    caught.length = 0;
    const { MAX_CAUGHT_PART_LENGTH } = await import("@berth/protocol");
    const server2 = createMailCatcherServer({ stateDir, emit: (e) => caught.push(e as Caught) });
    await new Promise<void>((resolve) => server2.listen(0, "127.0.0.1", resolve));
    const port2 = (server2.server.address() as AddressInfo).port;
    try {
      await nodemailer
        .createTransport({ host: "127.0.0.1", port: port2, secure: false, ignoreTLS: true, auth: { user: STAGING, pass: passwords[STAGING]! } })
        .sendMail({ from: "a@acme.example", to: "b@client.example", subject: "long", html: `<p>${"x".repeat(MAX_CAUGHT_PART_LENGTH + 10)}</p>` });
    } finally {
      await new Promise<void>((resolve) => server2.close(() => resolve()));
    }
    expect(caught[0]!.html).toHaveLength(MAX_CAUGHT_PART_LENGTH);
    expect(caught[0]!.truncated).toBe(true);
  });

  it("tells the ERP to try again later (451) when the journal cannot take the message, so Odoo keeps it queued", async () => {
    const failing = createMailCatcherServer({
      stateDir,
      emit: () => {
        throw new Error("disk full");
      },
    });
    await new Promise<void>((resolve) => failing.listen(0, "127.0.0.1", resolve));
    const failingPort = (failing.server.address() as AddressInfo).port;
    try {
      const sent = nodemailer
        .createTransport({ host: "127.0.0.1", port: failingPort, secure: false, ignoreTLS: true, auth: { user: STAGING, pass: passwords[STAGING]! } })
        .sendMail(invoice);
      await expect(sent).rejects.toMatchObject({ responseCode: 451 });
    } finally {
      await new Promise<void>((resolve) => failing.close(() => resolve()));
    }
  });
});
