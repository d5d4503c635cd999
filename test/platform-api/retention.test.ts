// Retention of the time-partitioned tables (deployment_logs, agent_events; migration 0022 and
// modules/retention): month partitions made ahead, whole expired months dropped, the setting 0
// keeping everything, lines dated outside every month stored all the same, resent agent events
// stored once across a month boundary, the event stream resuming across one, and caught mail
// deleted after its 7 days. Log lines and events come from a simulated agent over the real
// agent link; logs are read through the API.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { Event } from "@berth/protocol";
import { runRetention } from "../../apps/control-plane/src/modules/retention/retention.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { SseStream, urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let owner: Person;
let agent: SimAgent;
let dep: string;

const DAY = 86_400_000;
const KEEP_ALL = { logDays: 0, agentEventDays: 0, commandDays: 0 };
const DEFAULTS = { logDays: 90, agentEventDays: 30, commandDays: 90 };

/** The first instant (UTC) of the month `k` months from the one holding `at`. */
const month = (at: Date, k: number) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + k, 1));
const yyyymm = (m: Date) => `${m.getUTCFullYear()}${String(m.getUTCMonth() + 1).padStart(2, "0")}`;

let n = 0;
/** A log line of the deployment, dated `ts`, tagged so it can be found again. */
function line(ts: Date, tag: string): Event {
  return { seq: agent.nextSeq++, ts: ts.toISOString(), kind: "log", command_id: null, deployment_id: dep, level: "info", message: `${tag} ${++n}`, step: "pulling_image" };
}
/** An event stored in agent_events (a server log line: no deployment), dated `ts`. */
function serverLine(ts: Date, tag: string): Event {
  return { seq: agent.nextSeq++, ts: ts.toISOString(), kind: "log", command_id: null, deployment_id: null, level: "info", message: `${tag} ${++n}`, step: null };
}

async function apiMessages(tag: string): Promise<string[]> {
  const res = await owner.api.get(`/deployments/${dep}/logs?limit=500`);
  expect(res.status).toBe(200);
  return (res.body.logs as { message: string }[]).map((l) => l.message).filter((m) => m.startsWith(`${tag} `));
}

async function partitions(table: string): Promise<string[]> {
  const { rows } = await cp.database.pool.query<{ name: string }>(
    "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = $1::regclass order by 1",
    [table],
  );
  return rows.map((r) => r.name);
}

async function journal(tag: string): Promise<{ seq: number; n: number }[]> {
  const { rows } = await cp.database.pool.query<{ seq: string; n: number }>(
    "select seq::text, count(*)::int as n from agent_events where server_id = $1 and body->>'message' like $2 group by seq order by seq",
    [d.server_id, `${tag} %`],
  );
  return rows.map((r) => ({ seq: Number(r.seq), n: r.n }));
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  const services = cp.app.services;
  d = await createDemoOrganization(cp.database.db, services);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const token = await services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = new SimAgent({ baseUrl: urlOf(cp), token: token.token });
  await agent.enroll();
  await agent.connect();
  dep = (await services.deployments.requestAction({ organizationId: d.organization_id, projectId: null }, d.environments.running, "deploy", { userId: null, apiKeyId: null })).id;
}, 60_000);

afterAll(async () => {
  agent?.close();
  await cp?.close();
});

describe("partitions", () => {
  it("are made for this month and the next two, once, when two runs race", async () => {
    const at = new Date(Date.UTC(2031, 5, 15));
    const pool = cp.database.pool;
    const [a, b] = await Promise.all([runRetention(pool, KEEP_ALL, at), runRetention(pool, KEEP_ALL, at)]);
    const expected = ["deployment_logs", "agent_events"].flatMap((t) => ["203106", "203107", "203108"].map((m) => `${t}_p${m}`)).sort();
    expect([...a.created, ...b.created].sort()).toEqual(expected);
    expect(await partitions("deployment_logs")).toEqual(expect.arrayContaining(["deployment_logs_p203106", "deployment_logs_p203107", "deployment_logs_p203108", "deployment_logs_default"]));
    expect(await partitions("agent_events")).toEqual(expect.arrayContaining(["agent_events_p203106", "agent_events_p203107", "agent_events_p203108", "agent_events_default"]));
    // Another run finds them all made.
    expect((await runRetention(pool, KEEP_ALL, at)).created).toEqual([]);
  });

  it("exist for this month and the next two from the start (the migration and the job at start)", async () => {
    const now = new Date();
    for (const t of ["deployment_logs", "agent_events"]) {
      expect(await partitions(t)).toEqual(expect.arrayContaining([0, 1, 2].map((k) => `${t}_p${yyyymm(month(now, k))}`)));
    }
  });
});

describe("retention", () => {
  it("drops whole months older than the setting, keeps the lines inside it; 0 keeps everything", async () => {
    const now = new Date();
    // The months of five months ago onwards, as a job run then would have made them.
    await runRetention(cp.database.pool, KEEP_ALL, month(now, -5));
    const old = new Date(month(now, -5).getTime() + 3 * DAY);
    const recent = new Date(now.getTime() - 10 * DAY);
    await agent.sendAcked([line(old, "old-log"), line(recent, "recent-log"), serverLine(old, "old-event"), serverLine(recent, "recent-event")]);
    expect(await apiMessages("old-log")).toHaveLength(1);
    expect(await apiMessages("recent-log")).toHaveLength(1);

    const kept = await runRetention(cp.database.pool, KEEP_ALL, now);
    expect(kept.dropped).toEqual([]);
    expect(await apiMessages("old-log")).toHaveLength(1);
    expect(await journal("old-event")).toHaveLength(1);

    const run = await runRetention(cp.database.pool, DEFAULTS, now);
    expect(run.dropped).toEqual(expect.arrayContaining([`deployment_logs_p${yyyymm(month(now, -5))}`, `agent_events_p${yyyymm(month(now, -5))}`]));
    // Only months that ended before the cutoff went.
    for (const name of run.dropped) {
      const ym = name.slice(-6);
      const end = Date.UTC(Number(ym.slice(0, 4)), Number(ym.slice(4)), 1);
      const days = name.startsWith("deployment_logs") ? 90 : 30;
      expect(end).toBeLessThanOrEqual(now.getTime() - days * DAY);
    }
    expect(await apiMessages("old-log")).toEqual([]);
    expect(await apiMessages("recent-log")).toHaveLength(1);
    expect(await journal("old-event")).toEqual([]);
    expect(await journal("recent-event")).toHaveLength(1);
    // The deployment record stays.
    expect((await owner.api.get(`/deployments/${dep}`)).status).toBe(200);
  });

  it("stores lines dated outside every month partition, and deletes the expired ones among them", async () => {
    const past = new Date(Date.UTC(1999, 0, 1));
    const future = new Date(Date.UTC(2199, 0, 1));
    await agent.sendAcked([line(past, "far-past"), line(future, "far-future"), serverLine(past, "far-past-event"), serverLine(future, "far-future-event")]);
    expect(await apiMessages("far-past")).toHaveLength(1);
    expect(await apiMessages("far-future")).toHaveLength(1);
    const { rows } = await cp.database.pool.query<{ n: number }>("select count(*)::int as n from deployment_logs_default where message like 'far-%'");
    expect(rows[0]!.n).toBe(2);

    await runRetention(cp.database.pool, DEFAULTS, new Date());
    expect(await apiMessages("far-past")).toEqual([]);
    expect(await apiMessages("far-future")).toHaveLength(1);
    expect(await journal("far-past-event")).toEqual([]);
    expect(await journal("far-future-event")).toHaveLength(1);
  });

  it("moves a month's lines out of the DEFAULT partition into the month's partition when it is made", async () => {
    const at = new Date(Date.UTC(2040, 2, 10));
    await agent.sendAcked([line(at, "in-2040"), serverLine(at, "in-2040-event")]);
    const inDefault = async () => (await cp.database.pool.query<{ n: number }>("select count(*)::int as n from deployment_logs_default where message like 'in-2040 %'")).rows[0]!.n;
    expect(await inDefault()).toBe(1);
    await runRetention(cp.database.pool, KEEP_ALL, at);
    expect(await inDefault()).toBe(0);
    const { rows } = await cp.database.pool.query<{ n: number }>("select count(*)::int as n from deployment_logs_p204003 where message like 'in-2040 %'");
    expect(rows[0]!.n).toBe(1);
    expect(await apiMessages("in-2040")).toHaveLength(1);
    expect(await journal("in-2040-event")).toHaveLength(1);
  });
});

describe("caught mail", () => {
  it("is deleted once older than 7 days, in every box, also one that no new mail reaches", async () => {
    const now = new Date();
    const mail = (environmentId: string, ageDays: number, subject: string) =>
      cp.database.pool.query(
        `insert into caught_mails (id, organization_id, environment_id, received_at, "from", "to", subject, size, html, text, truncated, headers, attachments)
         values (gen_random_uuid(), $1, $2, $3, 'erp@shop.example', '{buyer@example.com}', $4, 10, null, 'hello', false, '[]', '[]')`,
        [d.organization_id, environmentId, new Date(now.getTime() - ageDays * DAY), subject],
      );
    await mail(d.environments.running, 8, "expired");
    await mail(d.environments.running, 1, "kept");
    await mail(d.environments.stopped, 7.5, "expired in a quiet box");
    const run = await runRetention(cp.database.pool, DEFAULTS, now);
    expect(run.mails).toBe(2);
    const { rows } = await cp.database.pool.query<{ subject: string }>("select subject from caught_mails order by subject");
    expect(rows.map((r) => r.subject)).toEqual(["kept"]);
  });
});

describe("agent events resent across a month boundary", () => {
  it("are stored once each", async () => {
    const now = new Date();
    await runRetention(cp.database.pool, KEEP_ALL, month(now, -1));
    const boundary = month(now, 0);
    // Two events each side of the boundary between last month's partition and this month's.
    const batch = [-2, -1, 0, 1].map((ms) => serverLine(new Date(boundary.getTime() + ms), "boundary"));
    await agent.sendAcked(batch);
    agent.sendEvents(batch);
    agent.sendEvents([...batch.slice(1), ...[serverLine(now, "boundary")]]);
    await agent.until(() => agent.ackedUpTo === agent.nextSeq - 1, 10_000, "the resends' ack");
    // Resent again after a reconnect, followed by a new event whose ack says the resends were read.
    agent.close();
    await agent.connect();
    await agent.sendAcked([...batch, serverLine(now, "boundary")]);
    const stored = await journal("boundary");
    expect(stored.map((s) => s.seq)).toEqual([...batch.map((e) => e.seq), agent.nextSeq - 2, agent.nextSeq - 1]);
    expect(stored.every((s) => s.n === 1)).toBe(true);
    // Each side of the boundary in its own month's partition.
    const last = `agent_events_p${yyyymm(month(now, -1))}`;
    const current = `agent_events_p${yyyymm(boundary)}`;
    const { rows } = await cp.database.pool.query<{ part: string; n: number }>(
      "select tableoid::regclass::text as part, count(*)::int as n from agent_events where server_id = $1 and seq = any($2::bigint[]) group by 1 order by 1",
      [d.server_id, batch.map((e) => e.seq)],
    );
    expect(Object.fromEntries(rows.map((r) => [r.part, r.n]))).toEqual({ [last]: 2, [current]: 2 });
  });

  it("a row already stored above the watermark is not stored again (its month's unique key)", async () => {
    const before = new Date(month(new Date(), 0).getTime() - 1);
    const [e] = [serverLine(before, "prestored")];
    await cp.database.pool.query("insert into agent_events (server_id, seq, kind, ts, body) values ($1, $2, 'log', $3, $4)", [d.server_id, e!.seq, e!.ts, JSON.stringify(e)]);
    await agent.sendAcked([e!, serverLine(new Date(), "prestored")]);
    const stored = await journal("prestored");
    expect(stored).toHaveLength(2);
    expect(stored.every((s) => s.n === 1)).toBe(true);
  });
});

describe("the event stream", () => {
  it("resumes with Last-Event-ID across a month boundary: the missed lines of both months, none twice", async () => {
    const now = new Date();
    await runRetention(cp.database.pool, KEEP_ALL, month(now, -1));
    const lastMonth = new Date(month(now, 0).getTime() - 1000);
    const s = await SseStream.open(urlOf(cp), { organization_id: d.organization_id }, { token: owner.token });
    try {
      await agent.sendAcked([line(lastMonth, "sse-before")]);
      await s.until((x) => x.of("deployment.log").some((e) => String(e.data.message).startsWith("sse-before ")), "the first line");
      const resumeAt = s.lastId!;
      s.close();
      // Missed while away: lines dated in last month's partition, this month's, and the DEFAULT one.
      await agent.sendAcked([line(now, "sse-missed"), line(lastMonth, "sse-missed"), line(new Date(Date.UTC(2199, 0, 1)), "sse-missed"), line(now, "sse-missed")]);
      const r = await SseStream.open(urlOf(cp), { organization_id: d.organization_id }, { token: owner.token, lastEventId: resumeAt });
      try {
        await agent.sendAcked([line(now, "sse-after")]);
        await r.until((x) => x.of("deployment.log").some((e) => String(e.data.message).startsWith("sse-after ")), "the line after resuming");
        const got = r.of("deployment.log").map((e) => String(e.data.message));
        expect(got.filter((m) => m.startsWith("sse-before "))).toEqual([]);
        expect(got.filter((m) => m.startsWith("sse-missed "))).toEqual([n - 4, n - 3, n - 2, n - 1].map((i) => `sse-missed ${i}`));
        const ids = r.events.map((e) => e.id);
        expect(new Set(ids).size).toBe(ids.length);
      } finally {
        r.close();
      }
    } finally {
      s.close();
    }
  });
});
