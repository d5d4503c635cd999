// Credentials never in URLs, and a bounded number of open event streams (security findings 10
// and 11): a session token in the query is refused on every route; an EventSource opens the
// stream with a single-use, short-lived ticket for one organisation; each organisation and
// person may hold only so many streams; request logs show no credential.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { logLines } from "../support/log-lines.ts";
import { addPerson, type Person } from "../support/people.ts";
import { SseStream, urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let base: string;
let d: DemoOrganization;
let owner: Person;
let logged: string[] = [];
const open: SseStream[] = [];

beforeAll(async () => {
  // Small caps so they can be reached; every request logged, to read what the log keeps.
  const log = logLines();
  logged = log.lines;
  cp = await startControlPlane({ listen: true, streamCaps: { perOrganization: 3, perPerson: 2 }, logger: { level: "info", stream: log.stream } });
  base = urlOf(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
});

afterAll(async () => {
  for (const s of open) s.close();
  await cp?.close();
});

async function stream(query: Record<string, string>, token?: string) {
  const s = await SseStream.open(base, query, token ? { token } : {});
  open.push(s);
  return s;
}

async function ticketFor(person: Person, organizationId = d.organization_id): Promise<string> {
  const res = await person.api.post("/events/tickets", { organization_id: organizationId });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.ticket as string;
}

describe("tokens in URLs", () => {
  it("a session token in the query is refused on every platform route, even a valid one", async () => {
    for (const path of [`/api/v1/me?access_token=${owner.token}`, `/api/v1/organizations/${d.organization_id}/projects?token=${owner.token}`]) {
      const res = await fetch(`${base}${path}`);
      expect(res.status, path).toBe(401);
      expect(((await res.json()) as { error: string }).error).toBe("query_token_refused");
    }
    // With the header as well, the URL still may not carry it.
    const both = await fetch(`${base}/api/v1/me?access_token=${owner.token}`, { headers: { authorization: `Bearer ${owner.token}` } });
    expect(both.status).toBe(401);
  });

  it("a ticket opens one stream of its organisation, once", async () => {
    const ticket = await ticketFor(owner);
    expect(ticket).toMatch(/^bet_/);
    const first = await stream({ organization_id: d.organization_id, ticket });
    expect(first.status).toBe(200);
    first.close();
    const again = await stream({ organization_id: d.organization_id, ticket });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("invalid_stream_ticket");
  });

  it("a ticket is refused for another organisation, after a minute, forged or for a signed-out session", async () => {
    // Someone with an organisation of their own: their ticket is for it, not for the demo one.
    const reg = await fetch(`${base}/api/v1/auth/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `other-${Date.now()}@example.test`, name: "Other", password: "correct horse battery staple", organization_name: "Other" }),
    });
    expect(reg.status).toBe(201);
    const other = (await reg.json()) as { token: string; organization: { id: string } };
    const foreignTicket = await fetch(`${base}/api/v1/events/tickets`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${other.token}` },
      body: JSON.stringify({ organization_id: other.organization.id }),
    });
    expect(foreignTicket.status).toBe(201);
    const { ticket: foreign } = (await foreignTicket.json()) as { ticket: string };
    const crossed = await stream({ organization_id: d.organization_id, ticket: foreign });
    expect(crossed.status).toBe(401);
    expect(crossed.body.error).toBe("invalid_stream_ticket");

    const late = await ticketFor(owner);
    cp.clock.advance(61_000);
    const expired = await stream({ organization_id: d.organization_id, ticket: late });
    expect(expired.status).toBe(401);
    expect(expired.body.error).toBe("invalid_stream_ticket");

    const good = await ticketFor(owner);
    // The signature's first character: its last one carries padding bits a decoder ignores, so
    // changing A to B there left the same signature (the test failed one run in 16).
    const dot = good.lastIndexOf(".");
    const forged = `${good.slice(0, dot + 1)}${good[dot + 1] === "A" ? "B" : "A"}${good.slice(dot + 2)}`;
    expect((await stream({ organization_id: d.organization_id, ticket: forged })).status).toBe(401);

    const leaver = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
    const t = await ticketFor(leaver);
    expect((await leaver.api.post("/auth/logout")).status).toBeLessThan(300);
    const signedOut = await stream({ organization_id: d.organization_id, ticket: t });
    expect(signedOut.status).toBe(401);
  });

  it("a ticket is only issued to someone who may watch the organisation", async () => {
    const outsider = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    const res = await outsider.api.post("/events/tickets", { organization_id: d.organization_id });
    expect(res.status).toBe(404);
  });

  it("request logs keep neither the ticket nor the Authorization header", async () => {
    const ticket = await ticketFor(owner);
    const s = await stream({ organization_id: d.organization_id, ticket });
    expect(s.status).toBe(200);
    s.close();
    await fetch(`${base}/api/v1/me`, { headers: { authorization: `Bearer ${owner.token}` } });
    const all = logged.join("\n");
    expect(all).toContain("ticket=[redacted]");
    expect(all).not.toContain(ticket.slice(4, 40));
    expect(all).not.toContain(owner.token);
  });
});

describe("open streams are capped", () => {
  it("per person, then per organisation, with Retry-After; a closed stream frees its slot", async () => {
    const alice = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
    const bob = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
    const q = { organization_id: d.organization_id };
    const a1 = await stream(q, alice.token);
    const a2 = await stream(q, alice.token);
    expect([a1.status, a2.status]).toEqual([200, 200]);
    const a3 = await stream(q, alice.token);
    expect(a3.status).toBe(429);
    expect(a3.body.error).toBe("too_many_streams");
    expect(a3.body.retry_after).toBeGreaterThan(0);

    const b1 = await stream(q, bob.token);
    expect(b1.status).toBe(200);
    const b2 = await stream(q, bob.token);
    expect(b2.status).toBe(429); // the organisation's 3 are open

    a1.close();
    await waitForSlot(() => stream(q, bob.token));
  });
});

/** A closed stream's slot is given back when the server sees the socket close. */
async function waitForSlot(open: () => Promise<SseStream>) {
  for (let i = 0; i < 50; i++) {
    const s = await open();
    if (s.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the closed stream's slot was never given back");
}
