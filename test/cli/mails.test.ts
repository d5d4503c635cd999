// `berth mails <environment> [--id <mail>]` against a real control plane: the newest caught mail as a table and as JSON, one message with
// its recipients, attachments and text part (or HTML with --html), with an API key and with
// a signed-in person (the platform API), and a clear error for a mail that is not there.
import { randomUUID } from "node:crypto";
import { expect, it } from "vitest";
import { json, signedInPerson, withApiKey } from "../support/cli-people.ts";
import { cliSuite } from "../support/cli-suite.ts";

const s = cliSuite();

/** A caught mail as the ingest stores it (the agent-to-API path is test/public-api/mails.test.ts's). */
async function caught(subject: string, receivedAt: Date): Promise<string> {
  const id = randomUUID();
  await s.cp.database.pool.query(
    `insert into caught_mails (id, organization_id, environment_id, received_at, "from", "to", subject, size, html, text, truncated, headers, attachments)
     values ($1, $2, $3, $4, 'noreply@acme.example', '{customer@client.example}', $5, 4096, $6, $7, false, $8, $9)`,
    [id, s.d.organization_id, s.d.environments.stopped, receivedAt, subject, `<p>${subject}</p>`, `Text of ${subject}`,
      JSON.stringify([{ name: "Subject", value: subject }]), JSON.stringify([{ filename: "invoice.pdf", content_type: "application/pdf", size: 2048 }])],
  );
  return id;
}

it("lists a staging environment's caught mail and shows one, with an API key and as a person", { timeout: 60_000 }, async () => {
  const older = await caught("Welcome to Acme", new Date(Date.now() - 60_000));
  const newer = await caught("Invoice INV/2026/0009", new Date());
  const env = s.d.environments.stopped;

  const run = withApiKey(s, s.d.api_keys.org_ro);
  const table = await run(["mails", env]);
  expect(table.code, table.stderr).toBe(0);
  const lines = table.stdout.trim().split("\n");
  expect(lines[0]).toMatch(/^ID\s+RECEIVED\s+FROM\s+TO\s+SUBJECT\s+ATTACHMENTS$/);
  expect(lines[1]).toContain("Invoice INV/2026/0009");
  expect(lines[2]).toContain("Welcome to Acme");
  expect(lines[1]).toContain("invoice.pdf");

  const listed = await json<{ id: string; subject: string }[]>(run, ["mails", env]);
  expect(listed.map((m) => m.id)).toEqual([newer, older]);

  const one = await run(["mails", env, "--id", newer]);
  expect(one.code, one.stderr).toBe(0);
  expect(one.stdout).toContain("customer@client.example");
  expect(one.stdout).toContain("invoice.pdf (application/pdf, 2.0 KB)");
  expect(one.stdout).toContain("Text of Invoice INV/2026/0009");
  expect((await run(["mails", env, "--id", newer, "--html"])).stdout).toContain("<p>Invoice INV/2026/0009</p>");

  const person = await signedInPerson(s);
  const asPerson = await json<{ html: string }>(person, ["mails", env, "--id", older]);
  expect(asPerson.html).toBe("<p>Welcome to Acme</p>");

  const missing = await run(["mails", env, "--id", randomUUID()]);
  expect(missing.code).not.toBe(0);
  expect(missing.stderr).toContain("Mail not found");
});
