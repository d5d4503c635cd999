// What a CI job with an API key needs to follow a deployment: its log lines
// (GET /deployments/{id}/logs, cursor paged) and the live event stream (a ticket from
// POST /events/tickets for GET /api/v1/events), each limited to what the key may see:
// a key of another organisation or project gets 404 / no events, a read-only key may read.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { SseStream, urlOf } from "../support/sse.ts";
import { bearer, buildWorld, expectError, send, type World } from "./fixtures.ts";

let cp: TestControlPlane;
let base: string;
let w: World;
let foreign: World;
const open: SseStream[] = [];

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  base = urlOf(cp);
  w = await buildWorld(cp);
  foreign = await buildWorld(cp, { name: "Foreign" });
});
afterAll(async () => {
  for (const s of open) s.close();
  await cp?.close();
});

async function writeLogs(organizationId: string, deploymentId: string, messages: string[]): Promise<void> {
  for (const m of messages) {
    await cp.database.pool.query(
      "insert into deployment_logs (organization_id, deployment_id, ts, level, message, step) values ($1, $2, now(), 'info', $3, 'pulling_image')",
      [organizationId, deploymentId, m],
    );
  }
  await cp.database.pool.query("select pg_notify('berth_org_events', $1)", [organizationId]);
}

async function ticket(key: string): Promise<{ ticket: string; organization_id: string; stream_url: string }> {
  const res = await send(cp, bearer(key), { method: "POST", path: "/events/tickets" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

async function streamOf(key: string, lastEventId?: string): Promise<SseStream> {
  const t = await ticket(key);
  const s = await SseStream.open(base, { organization_id: t.organization_id, ticket: t.ticket }, lastEventId ? { lastEventId } : {});
  open.push(s);
  expect(s.status, JSON.stringify(s.body)).toBe(200);
  return s;
}

const lines = (s: SseStream, tag: string) => s.of("deployment.log").map((e) => e.data.message as string).filter((m) => m.startsWith(tag));

describe("GET /deployments/{id}/logs", () => {
  it("pages a task's log lines oldest first with an opaque cursor; read-only and project keys may read", async () => {
    const messages = ["paged 1", "paged 2", "paged 3", "paged 4", "paged 5"];
    await writeLogs(w.organizationId, w.tasks.history, messages);
    for (const kind of ["org_ro", "project_ro", "org_rw"] as const) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await send(cp, bearer(w.keys[kind]), { method: "GET", path: `/deployments/${w.tasks.history}/logs?limit=2${cursor ? `&cursor=${cursor}` : ""}` });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.pagination.total).toBe(5);
        for (const l of res.body.data) {
          expect(l).toMatchObject({ deployment_id: w.tasks.history, level: "info", step: "pulling_image" });
          expect(l.id).toMatch(/^\d+$/);
        }
        seen.push(...res.body.data.map((l: { message: string }) => l.message));
        cursor = res.body.pagination.next_cursor;
        pages++;
      } while (cursor);
      expect(seen, kind).toEqual(messages);
      expect(pages).toBe(3);
    }
  });

  it("is a 404 for a key of another project or organisation, and a 400 for a forged cursor", async () => {
    expectError(await send(cp, bearer(w.keys.other_ro), { method: "GET", path: `/deployments/${w.tasks.history}/logs` }), 404, "not_found");
    expectError(await send(cp, bearer(foreign.keys.org_rw), { method: "GET", path: `/deployments/${w.tasks.history}/logs` }), 404, "not_found");
    expectError(await send(cp, bearer(w.keys.org_ro), { method: "GET", path: `/deployments/${w.tasks.history}/logs?cursor=abc` }), 400, "invalid_cursor");
  });
});

describe("POST /events/tickets and the stream it opens", () => {
  it("a read-only organisation key follows every project's log lines and resumes after Last-Event-ID", async () => {
    const t = await ticket(w.keys.org_ro);
    expect(t.organization_id).toBe(w.organizationId);
    expect(t.stream_url).toBe(`/api/v1/events?organization_id=${w.organizationId}&ticket=${t.ticket}`);
    const s = await streamOf(w.keys.org_ro);
    await writeLogs(w.organizationId, w.tasks.history, ["orgkey P1", "orgkey P2"]);
    await writeLogs(w.organizationId, w.tasks.other, ["orgkey Q1"]);
    await s.until((x) => lines(x, "orgkey").length === 3, "3 lines of both projects");
    expect(lines(s, "orgkey")).toEqual(["orgkey P1", "orgkey P2", "orgkey Q1"]);
    const after = s.events.find((e) => e.data.message === "orgkey P2")!.id!;
    s.close();

    const resumed = await streamOf(w.keys.org_ro, after);
    await writeLogs(w.organizationId, w.tasks.history, ["orgkey P3"]);
    await resumed.until((x) => lines(x, "orgkey").length === 2, "the lines after the resume point");
    expect(lines(resumed, "orgkey")).toEqual(["orgkey Q1", "orgkey P3"]);
  });

  it("a project-scoped key sees only its project's events, not even organisation-wide ones", async () => {
    const s = await streamOf(w.keys.project_ro);
    const whole = await streamOf(w.keys.org_ro);
    await writeLogs(w.organizationId, w.tasks.other, ["scoped Q1"]);
    await writeLogs(w.organizationId, w.tasks.history, ["scoped P1"]);
    await cp.database.pool.query("update servers set status = case when status = 'online' then 'offline' else 'online' end where id = $1", [w.serverId]);
    await writeLogs(w.organizationId, w.tasks.history, ["scoped P2"]);
    await s.until((x) => lines(x, "scoped").length === 2, "P's lines");
    // The organisation key's stream, opened at the same time, does get the server's event.
    await whole.until((x) => x.of("server.status").length === 1, "the server.status event");
    expect(lines(s, "scoped")).toEqual(["scoped P1", "scoped P2"]);
    expect(s.events.filter((e) => e.event !== "deployment.log" && e.data.project_id !== w.projectId)).toEqual([]);
  });

  it("a ticket opens one stream, of its own organisation only; a revoked key's stream ends and its ticket is refused", async () => {
    const t = await ticket(w.keys.org_rw);
    const wrongOrg = await SseStream.open(base, { organization_id: foreign.organizationId, ticket: t.ticket });
    expect(wrongOrg.status).toBe(401);
    expect(wrongOrg.body.error).toBe("invalid_stream_ticket");
    const first = await SseStream.open(base, { organization_id: w.organizationId, ticket: t.ticket });
    open.push(first);
    expect(first.status).toBe(200);
    const again = await SseStream.open(base, { organization_id: w.organizationId, ticket: t.ticket });
    expect(again.status).toBe(401);
    expect(again.body.error).toBe("invalid_stream_ticket");

    const victim = await cp.app.services.apiKeys.create({ organizationId: w.organizationId, projectId: null, access: "read_only", name: "victim", createdBy: null });
    const live = await streamOf(victim.key);
    const spare = await ticket(victim.key);
    await cp.app.services.apiKeys.revoke({ organizationId: w.organizationId, projectId: null }, victim.id);
    await live.until((x) => x.ended, "the revoked key's stream to end", 10_000);
    const refused = await SseStream.open(base, { organization_id: w.organizationId, ticket: spare.ticket });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe("api_key_revoked");
  });
});
