// GET …/environments/{id}/mails in both APIs, fed the way production feeds them: a simulated
// agent sends mail.caught events over the real agent link into the real ingest and
// PostgreSQL. What the list and one message show, the cursor, who may file mail for an
// environment (only its server's agent) and read it (only its organisation), resends, and
// the retention rule (7 days, 1,000 per environment) judged by the control plane's clock.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { Event, MailCaughtEvent } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { platformClient, publicClient } from "../support/http.ts";
import { addPerson, type Person } from "../support/people.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let other: DemoOrganization;
let agent: SimAgent;
let otherAgent: SimAgent;
let member: Person;
let staging: string;
/** The first two mails the agent reports for the staging environment. */
let first: Event & { mail_id: string };
let second: Event & { mail_id: string };

const DAY = 24 * 3600 * 1000;

function mail(a: SimAgent, environmentId: string, fields: Partial<MailCaughtEvent> = {}): Event {
  return {
    seq: a.nextSeq++,
    ts: new Date().toISOString(),
    kind: "mail.caught",
    mail_id: randomUUID(),
    environment_id: environmentId,
    received_at: cp.clock.now().toISOString(),
    from: '"Acme (staging)" <noreply@acme.example>',
    to: ["customer@client.example"],
    subject: "Invoice INV/2026/0001",
    size: 5120,
    html: "<p>Your <b>invoice</b></p>",
    text: "Your invoice",
    truncated: false,
    headers: [{ name: "Subject", value: "Invoice INV/2026/0001" }],
    attachments: [{ filename: "INV_2026_0001.pdf", content_type: "application/pdf", size: 3000 }],
    ...fields,
  } as Event;
}

async function connected(org: DemoOrganization) {
  const token = await cp.app.services.enrollment.newToken(org.organization_id, org.server_id, null);
  const a = new SimAgent({ baseUrl: urlOf(cp), token: token.token });
  await a.enroll();
  await a.connect();
  return a;
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  other = await createDemoOrganization(cp.database.db, cp.app.services);
  staging = d.environments.stopped;
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  agent = await connected(d);
  otherAgent = await connected(other);
}, 60_000);

afterAll(async () => {
  agent?.close();
  otherAgent?.close();
  await cp?.close();
});

const pub = () => publicClient(cp.app, d.api_keys.org_ro);

describe("an environment's caught mail", () => {
  it("lists what the server's agent reported, newest first, with attachments' names; one message has its parts, headers and attachments", async () => {
    first = mail(agent, staging, { subject: "Welcome" }) as typeof first;
    cp.clock.advance(1000);
    second = mail(agent, staging, { subject: "Invoice", received_at: cp.clock.now().toISOString() }) as typeof second;
    await agent.sendAcked([first, second]);

    const list = await pub().get(`/environments/${staging}/mails`);
    expect(list.status).toBe(200);
    expect(list.body.data.map((m: { subject: string }) => m.subject)).toEqual(["Invoice", "Welcome"]);
    expect(list.body.data[0]).toEqual({
      id: second.mail_id,
      from: '"Acme (staging)" <noreply@acme.example>',
      to: ["customer@client.example"],
      subject: "Invoice",
      received_at: (second as MailCaughtEvent).received_at,
      size: 5120,
      attachments: ["INV_2026_0001.pdf"],
    });
    expect(list.body.pagination).toMatchObject({ has_more: false, total: 2 });

    const one = await pub().get(`/environments/${staging}/mails/${second.mail_id}`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({
      id: second.mail_id,
      environment_id: staging,
      html: "<p>Your <b>invoice</b></p>",
      text: "Your invoice",
      truncated: false,
      headers: [{ name: "Subject", value: "Invoice INV/2026/0001" }],
      attachments: [{ filename: "INV_2026_0001.pdf", content_type: "application/pdf", size: 3000 }],
    });

    // The dashboard's API: a project member reads the same.
    const platform = await platformClient(cp.app, member.token).get(`/environments/${staging}/mails/${second.mail_id}`);
    expect(platform.status).toBe(200);
    expect(platform.body.html).toBe("<p>Your <b>invoice</b></p>");
  });

  it("pages with a cursor", async () => {
    const page1 = await pub().get(`/environments/${staging}/mails?limit=1`);
    expect(page1.body.data.map((m: { id: string }) => m.id)).toEqual([second.mail_id]);
    expect(page1.body.pagination.has_more).toBe(true);
    const page2 = await pub().get(`/environments/${staging}/mails?limit=1&cursor=${encodeURIComponent(page1.body.pagination.next_cursor)}`);
    expect(page2.body.data.map((m: { id: string }) => m.id)).toEqual([first.mail_id]);
    expect(page2.body.pagination.has_more).toBe(false);
  });

  it("stores a resent mail once", async () => {
    await agent.sendAcked([{ ...first, seq: agent.nextSeq++ } as Event]);
    expect((await pub().get(`/environments/${staging}/mails`)).body.pagination.total).toBe(2);
  });

  it("files nothing that another server's agent reports for this environment (acknowledged, not stored)", async () => {
    const forged = mail(otherAgent, staging, { subject: "Injected by another server" });
    await otherAgent.sendAcked([forged]);
    const list = await pub().get(`/environments/${staging}/mails`);
    expect(list.body.data.map((m: { subject: string }) => m.subject)).not.toContain("Injected by another server");
    expect(list.body.pagination.total).toBe(2);
  });

  it("shows nothing to another organisation's key, and 404s an unknown mail", async () => {
    const foreign = await publicClient(cp.app, other.api_keys.org_rw).get(`/environments/${staging}/mails`);
    expect(foreign.status).toBe(404);
    const foreignOne = await publicClient(cp.app, other.api_keys.org_rw).get(`/environments/${staging}/mails/${first.mail_id}`);
    expect(foreignOne.status).toBe(404);
    const unknown = await pub().get(`/environments/${staging}/mails/${randomUUID()}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe("not_found");
  });
});

describe("retention: 7 days, at most 1,000 per environment", () => {
  it("keeps the newest 1,000 of an environment when mail arrives past the cap, the oldest dropped first", async () => {
    const env = d.environments.running;
    // 1,000 rows written directly, a minute apart, all within the 7 days.
    const start = cp.clock.now().getTime() - 2 * DAY;
    const values = Array.from({ length: 1000 }, (_, i) => `('${randomUUID()}', '${d.organization_id}', '${env}', '${new Date(start + i * 60_000).toISOString()}', 'a@acme.example', '{}', 'bulk ${i}', 10, null, 'x', false, '[]', '[]')`);
    await cp.database.pool.query(
      `insert into caught_mails (id, organization_id, environment_id, received_at, "from", "to", subject, size, html, text, truncated, headers, attachments) values ${values.join(",")}`,
    );
    await agent.sendAcked([mail(agent, env, { subject: "newest" })]);
    const { rows } = await cp.database.pool.query<{ n: string; oldest: string }>(
      "select count(*) as n, (select subject from caught_mails where environment_id = $1 order by received_at limit 1) as oldest from caught_mails where environment_id = $1",
      [env],
    );
    expect(Number(rows[0]!.n)).toBe(1000);
    expect(rows[0]!.oldest).toBe("bulk 1");
    const list = await pub().get(`/environments/${env}/mails?limit=1`);
    expect(list.body.data[0].subject).toBe("newest");
    expect(list.body.pagination.total).toBe(1000);
  });

  it("shows no mail older than 7 days, and deletes it when the environment's next mail arrives", async () => {
    cp.clock.advance(8 * DAY);
    const list = await pub().get(`/environments/${staging}/mails`);
    expect(list.body.data).toEqual([]);
    expect((await pub().get(`/environments/${staging}/mails/${first.mail_id}`)).status).toBe(404);

    await agent.sendAcked([mail(agent, staging, { subject: "fresh" })]);
    const { rows } = await cp.database.pool.query<{ subject: string }>("select subject from caught_mails where environment_id = $1", [staging]);
    expect(rows.map((r) => r.subject)).toEqual(["fresh"]);
  });
});
