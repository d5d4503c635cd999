// GET /api/v1/events: the organisation's live stream as server-sent events, read by a real
// HTTP client from listening servers, with log lines and figures sent by a simulated agent
// over the real agent link.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { Event } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { SseStream, urlOf } from "../support/sse.ts";

// ---- the world ------------------------------------------------------------------------------

let cp: TestControlPlane;
let replica: TestControlPlane;
let base: string;
let replicaBase: string;
let d: DemoOrganization;
let owner: Person;
let agent: SimAgent;
/** A deployment of the demo project P, and one of another project Q. */
let depP: string;
let depQ: string;
let projectQ: string;
const open: SseStream[] = [];

async function stream(query: Record<string, string>, opts: { token?: string; lastEventId?: string; on?: string } = {}) {
  const s = await SseStream.open(opts.on ?? base, query, opts);
  open.push(s);
  return s;
}

let line = 0;
/** Log events of a deployment, numbered so order and completeness can be checked. */
function logs(deploymentId: string, n: number, tag: string): Event[] {
  return Array.from({ length: n }, () => ({
    seq: agent.nextSeq++,
    ts: new Date().toISOString(),
    kind: "log" as const,
    command_id: null,
    deployment_id: deploymentId,
    level: "info" as const,
    message: `${tag} ${++line}`,
    step: "pulling_image" as const,
  }));
}

function stats(cpu: number): Event {
  return {
    seq: agent.nextSeq++,
    ts: new Date().toISOString(),
    kind: "stats",
    cpu_percent: cpu,
    ram_used_mb: 1024,
    ram_total_mb: 4096,
    disk_used_gb: 10,
    disk_total_gb: 100,
    load1: 0.5,
    load5: 0.4,
    load15: 0.3,
    containers_running: 2,
    containers_total: 3,
  };
}

const messages = (s: SseStream, tag: string) => s.of("deployment.log").map((e) => e.data.message as string).filter((m) => m.startsWith(`${tag} `));

beforeAll(async () => {
  // This file keeps its streams open until the end: caps far above what it opens.
  const streamCaps = { perOrganization: 1000, perPerson: 1000 };
  cp = await startControlPlane({ listen: true, streamCaps });
  base = urlOf(cp);
  replica = await startControlPlane({ url: cp.url, listen: true, streamCaps });
  replicaBase = urlOf(replica);
  const services = cp.app.services;
  d = await createDemoOrganization(cp.database.db, services);
  const org = { organizationId: d.organization_id, projectId: null };
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });

  // The agent of the demo server, where both projects' deployments run: an agent's log lines
  // are stored only for its own server's deployments.
  const token = await services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = new SimAgent({ baseUrl: base, token: token.token });
  await agent.enroll();
  await agent.connect();

  depP = (await services.deployments.requestAction(org, d.environments.running, "deploy", { userId: null, apiKeyId: null })).id;
  const q = await services.projects.create(org, { name: "Other ERP", server_id: d.server_id, default_branch: "main" });
  projectQ = q.id;
  const envQ = await services.environments.create(org, { project_id: q.id, name: "production" });
  depQ = (await services.deployments.requestAction(org, envQ.id, "deploy", { userId: null, apiKeyId: null })).id;
}, 60_000);

afterAll(async () => {
  for (const s of open) s.close();
  agent?.close();
  await replica?.stop();
  await cp?.close();
});

describe("the stream over HTTP", () => {
  it("delivers an agent's log lines as deployment.log events, in order, with the spec's fields", async () => {
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token });
    expect(s.status).toBe(200);
    expect(s.contentType).toMatch(/^text\/event-stream/);
    await s.until((x) => x.lastId !== null, "the opening id");
    expect(s.retry).toBeGreaterThan(0);

    agent.sendEvents(logs(depP, 5, "first"));
    await s.until((x) => messages(x, "first").length === 5, "5 log lines");
    expect(messages(s, "first")).toEqual([...Array(5).keys()].map((i) => `first ${line - 4 + i}`));
    const ev = s.of("deployment.log")[0]!;
    expect(ev.data).toMatchObject({ deployment_id: depP, level: "info", step: "pulling_image" });
    expect(new Date(ev.data.timestamp as string).toISOString()).toBe(ev.data.timestamp);
    expect(typeof ev.id).toBe("string");
  });

  it("resumes after a disconnect with Last-Event-ID: the missed lines, none twice, none skipped", async () => {
    const a = await stream({ organizationId: d.organization_id }, { token: owner.token });
    agent.sendEvents(logs(depP, 3, "before"));
    await a.until((x) => messages(x, "before").length === 3, "3 lines");
    const resumeAt = a.lastId!;
    a.close();

    agent.sendEvents(logs(depP, 4, "while-away"));
    await agent.until(() => agent.ackedUpTo === agent.nextSeq - 1, 5000, "the lines to be stored");

    const b = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: resumeAt });
    agent.sendEvents(logs(depP, 2, "after"));
    await b.until((x) => messages(x, "after").length === 2, "the lines after reconnecting");
    expect(messages(b, "before")).toEqual([]);
    expect(messages(b, "while-away")).toHaveLength(4);
    expect(messages(b, "after")).toHaveLength(2);
    const ids = b.events.map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("a stream opened without Last-Event-ID starts from now", async () => {
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token });
    agent.sendEvents(logs(depP, 1, "fresh"));
    await s.until((x) => messages(x, "fresh").length === 1, "the new line");
    expect(messages(s, "first")).toEqual([]);
  });

  it("deployment.status, environment.status and server.stats are on the stream too", async () => {
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token });
    await cp.database.pool.query("update deployments set status = 'building' where id = $1", [depP]);
    await cp.database.pool.query("update environments set status = 'stopped' where id = $1", [d.environments.running]);
    agent.sendEvents([stats(42)]);
    await s.until((x) => x.of("server.stats").length > 0 && x.of("environment.status").length > 0 && x.of("deployment.status").length > 0, "status and stats events");
    expect(s.of("deployment.status").at(-1)!.data).toMatchObject({ deployment_id: depP, status: "building", project_id: d.project_id });
    expect(s.of("environment.status").at(-1)!.data).toMatchObject({ environment_id: d.environments.running, status: "stopped" });
    expect(s.of("server.stats").at(-1)!.data).toMatchObject({ server_id: agent.identity.server_id, cpu_percent: 42, containers_running: 2 });
    await cp.database.pool.query("update environments set status = 'running' where id = $1", [d.environments.running]);
  });

  it("an event committed late by an older transaction is not skipped (gapless ordering)", async () => {
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token });
    const slow = await cp.database.pool.connect();
    try {
      await slow.query("begin");
      await slow.query(
        "insert into deployment_logs (organization_id, deployment_id, ts, level, message, step) values ($1, $2, now(), 'info', 'late 0', 'pulling_image')",
        [d.organization_id, depP],
      );
      // A younger transaction commits first...
      agent.sendEvents(logs(depP, 3, "late"));
      await agent.until(() => agent.ackedUpTo === agent.nextSeq - 1, 5000, "the younger lines to be stored");
      // Time for the stream to read (a reader that handed out the younger lines now would
      // move past the older transaction and never send its line).
      await new Promise((r) => setTimeout(r, 300));
      // ...then the older one.
      await slow.query("select pg_notify('berth_org_events', $1)", [d.organization_id]);
      await slow.query("commit");
    } finally {
      slow.release();
    }
    await s.until((x) => messages(x, "late").length === 4, "all 4 lines");
    expect(messages(s, "late")).toContain("late 0");
    // A client resuming from the last id gets nothing again.
    const again = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: s.lastId! });
    agent.sendEvents(logs(depP, 1, "marker"));
    await again.until((x) => messages(x, "marker").length === 1, "the marker");
    expect(messages(again, "late")).toEqual([]);
  });
});

describe("replicas", () => {
  it("a subscriber on one replica receives what the agent sent to the other, and resumes on either", async () => {
    expect(replicaBase).not.toBe(base);
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token, on: replicaBase });
    agent.sendEvents([...logs(depP, 3, "fanout"), stats(7)]);
    await s.until((x) => messages(x, "fanout").length === 3 && x.of("server.stats").some((e) => e.data.cpu_percent === 7), "lines and stats from the other replica");
    const resumeAt = s.lastId!;
    s.close();
    agent.sendEvents(logs(depP, 2, "crossover"));
    const back = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: resumeAt });
    await back.until((x) => messages(x, "crossover").length === 2, "the lines missed, on the first replica");
    expect(messages(back, "fanout")).toEqual([]);
  });

  it("closing a replica ends its streams cleanly", async () => {
    const extra = await startControlPlane({ url: cp.url, listen: true });
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token, on: urlOf(extra) });
    await s.until((x) => x.lastId !== null, "the opening id");
    await extra.stop();
    await s.until((x) => x.ended, "the stream to end");
  });
});

describe("who may subscribe, and to what", () => {
  it("needs a session, membership of the organisation and a well-formed Last-Event-ID", async () => {
    const anonymous = await stream({ organization_id: d.organization_id });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error).toBe("authentication_required");
    const outsider = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    const refused = await stream({ organization_id: d.organization_id }, { token: outsider.token });
    expect(refused.status).toBe(404);
    expect(refused.body.error).toBe("not_found");
    const malformed = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: "not-an-id" });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error).toBe("invalid_last_event_id");
    const missing = await stream({}, { token: owner.token });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("validation_error");
  });

  it("the OpenAPI document shows the stream as text/event-stream", async () => {
    const res = await fetch(`${base}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, { get?: { responses: Record<string, { content?: Record<string, unknown> }> } }> };
    const key = Object.keys(doc.paths).find((p) => p.endsWith("/events"));
    expect(key).toBeDefined();
    const ok = doc.paths[key!]!.get!.responses["200"]!;
    expect(Object.keys(ok.content ?? {})).toEqual(["text/event-stream"]);
  });

  it("EventSource clients open the stream with a ticket; a session token in the URL is refused", async () => {
    const refused = await stream({ organization_id: d.organization_id, access_token: owner.token });
    expect(refused.status).toBe(401);
    expect(refused.body.error).toBe("query_token_refused");
    const { ticket } = (await owner.api.post("/events/tickets", { organization_id: d.organization_id })).body;
    const s = await stream({ organization_id: d.organization_id, ticket });
    expect(s.status).toBe(200);
  });

  it("members below organisation admin receive their projects' events only; stats go to everyone", async () => {
    const projectMember = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
    const orgMember = await addPerson(cp.app, "org_member", { organizationId: d.organization_id });
    const admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
    const pm = await stream({ organization_id: d.organization_id }, { token: projectMember.token });
    const om = await stream({ organization_id: d.organization_id }, { token: orgMember.token });
    const ad = await stream({ organization_id: d.organization_id }, { token: admin.token });
    for (const s of [pm, om, ad]) await s.until((x) => x.lastId !== null, "the opening id");

    await cp.database.pool.query("update deployments set status = 'building' where id = $1", [depQ]);
    agent.sendEvents([...logs(depQ, 2, "in-q"), ...logs(depP, 2, "in-p"), stats(55)]);
    await ad.until((x) => messages(x, "in-p").length === 2 && messages(x, "in-q").length === 2 && x.of("server.stats").length > 0, "everything for the admin");
    await pm.until((x) => messages(x, "in-p").length === 2 && x.of("server.stats").length > 0, "project P's lines for its member");
    await om.until((x) => x.of("server.stats").length > 0, "stats for a plain member");
    // The markers came after the lines of Q in the same batch, so anything of Q would have arrived.
    expect(messages(pm, "in-q")).toEqual([]);
    expect(pm.of("deployment.status").filter((e) => e.data.project_id === projectQ)).toEqual([]);
    expect(messages(om, "in-p")).toEqual([]);
    expect(messages(om, "in-q")).toEqual([]);
    expect(ad.of("deployment.status").some((e) => e.data.project_id === projectQ)).toBe(true);
  });
});

describe("retention", () => {
  it("prunes old server.stats after two hours and other events after a week, never log lines", async () => {
    const pool = cp.database.pool;
    const org = d.organization_id;
    await pool.query(
      `insert into org_events (organization_id, type, data, created_at) values
         ($1, 'server.stats', '{"tag":"old-stats"}', now() - interval '3 hours'),
         ($1, 'server.stats', '{"tag":"new-stats"}', now() - interval '1 hour'),
         ($1, 'deployment.status', '{"tag":"old-status"}', now() - interval '8 days'),
         ($1, 'deployment.status', '{"tag":"recent-status"}', now() - interval '3 days')`,
      [org],
    );
    await pool.query(
      "insert into deployment_logs (organization_id, deployment_id, ts, level, message, step) values ($1, $2, now() - interval '30 days', 'info', 'ancient line', null)",
      [org, depP],
    );
    await cp.app.maintenance.runOnce();
    const { rows } = await pool.query<{ tag: string }>("select data->>'tag' as tag from org_events where organization_id = $1 and data ? 'tag' order by tag", [org]);
    expect(rows.map((r) => r.tag)).toEqual(["new-stats", "recent-status"]);
    const kept = await pool.query("select 1 from deployment_logs where message = 'ancient line'");
    expect(kept.rowCount).toBe(1);
  });

  it("a resume point older than what is kept gets event: reset, then the stream continues from now", async () => {
    const s = await stream({ organization_id: d.organization_id }, { token: owner.token });
    await s.until((x) => x.lastId !== null, "the opening id");
    const weekOld = Math.floor(Date.now() / 1000) - 8 * 24 * 3600;
    const stale = s.lastId!.replace(/-\d+$/, `-${weekOld}`);
    const r = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: stale });
    await r.until((x) => x.of("reset").length === 1, "the reset");
    expect(r.events[0]!.event).toBe("reset");
    expect(r.events[0]!.data.reason).toBe("resume_point_expired");
    agent.sendEvents(logs(depP, 1, "post-reset"));
    await r.until((x) => messages(x, "post-reset").length === 1, "live events after the reset");

    // A position this database never reached is not waited for either.
    const future = await stream({ organization_id: d.organization_id }, { token: owner.token, lastEventId: `99999999999.1-99999999999.1-${Math.floor(Date.now() / 1000)}` });
    await future.until((x) => x.of("reset").length === 1, "the reset");
    expect(future.events[0]!.data.reason).toBe("unknown_resume_point");
  });
});
