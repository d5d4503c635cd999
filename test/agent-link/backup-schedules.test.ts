// Scheduled backups end to end, with two control-plane replicas on one PostgreSQL, a
// simulated agent over the real link and the control planes' clocks moved forward: a due
// backup is created once at its slot whatever the replicas do, runs on the agent like a
// manual one, is pruned by the retention rule when it completes; a failed backup and a slot
// missed while the server was offline are events (live stream and signed webhook) and a red
// mark on the environment that clears when a later backup succeeds; skipped slots are caught
// up by one backup.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { SignedCommand } from "@berth/protocol";
import { backupsToKeep } from "../../apps/control-plane/src/modules/backups/backup-retention.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient, platformClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { uploadBackupFiles } from "../support/backup-uploads.ts";
import { SseStream, urlOf } from "../support/sse.ts";
import { waitFor } from "../support/wait.ts";

const JOBS = { retryDelaySeconds: 0, pollingIntervalSeconds: 0.5 };
const HOUR = 3600_000;
const DAY = 24 * HOUR;

let a: TestControlPlane;
let b: TestControlPlane;
let d: DemoOrganization;
let agent: SimAgent;
let pinger: NodeJS.Timeout | undefined;
let stream: SseStream;
/** What the agent answers to the next backup commands: ok, or a failure with this message. */
let backupOutcome: { ok: true } | { ok: false; message: string } | { silent: true } = { ok: true };
const backupCommands: SignedCommand[] = [];

const hooks: { path: string; body: string; event: string }[] = [];
let hookServer: Server;
let hookBase: string;

function answerBackup(cmd: SignedCommand, agentNow: SimAgent) {
  if (cmd.type !== "backup") return;
  backupCommands.push(cmd);
  const outcome = backupOutcome;
  if ("silent" in outcome) return;
  if (!outcome.ok) {
    agentNow.sendEvents([agentNow.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error: { code: "backup_failed", message: outcome.message } })]);
    return;
  }
  // As an agent does: each file goes to the backup store, then the result.
  void uploadBackupFiles(urlOf(a), cmd).then((files) =>
    agentNow.sendEvents([agentNow.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { files } })]),
  );
}

async function connectAgent() {
  await agent.connect();
  pinger = setInterval(() => agent.ping(), 300);
  await waitFor(async () => (await serverStatus()) === "online", 5000);
}
function disconnectAgent() {
  clearInterval(pinger);
  agent?.close();
}
async function serverStatus() {
  const { rows } = await a.database.pool.query<{ status: string }>("select status from servers where id = $1", [d.server_id]);
  return rows[0]!.status;
}

/** Moves both replicas' clocks (they follow real time otherwise). */
function advance(ms: number) {
  a.clock.advance(ms);
  b.clock.advance(ms);
}
/** Moves both clocks to `t`. */
function advanceTo(t: number) {
  advance(t - a.clock.now().getTime());
}
/** The daily slot the tests schedule (set by the first scheduler test). */
let slot: Date;

/** `n` scheduler passes on each replica at once. */
async function passes(n: number) {
  const all = await Promise.all([...Array.from({ length: n }, () => a.app.services.backupScheduler.tick()), ...Array.from({ length: n }, () => b.app.services.backupScheduler.tick())]);
  for (const p of all) expect(p.errors).toEqual([]);
  return all;
}
async function scheduledBackups(environmentId: string) {
  // Taken when its operation was requested, on the control planes' (moved) clock; seeded history has no operation.
  const { rows } = await a.database.pool.query<{ id: string; status: string; created_at: Date; comment: string | null }>(
    `select b.id, b.status, coalesce(d.created_at, b.created_at) as created_at, b.comment from backups b left join deployments d on d.id = b.deployment_id
     where b.environment_id = $1 and b.backup_type = 'scheduled' order by 3`,
    [environmentId],
  );
  return rows;
}
const hhmm = (t: Date) => t.toISOString().slice(11, 16);
const rw = () => publicClient(a.app, d.api_keys.org_rw);
const ro = () => publicClient(b.app, d.api_keys.org_ro);

beforeAll(async () => {
  hookServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hooks.push({ path: req.url ?? "/", body: Buffer.concat(chunks).toString("utf8"), event: String(req.headers["berth-event"]) });
      res.writeHead(200).end("ok");
    });
  });
  await new Promise<void>((r) => hookServer.listen(0, "127.0.0.1", r));
  hookBase = `http://127.0.0.1:${(hookServer.address() as { port: number }).port}`;

  a = await startControlPlane({ listen: true, heartbeatMs: 1000, jobs: JOBS, outboundAllow: ["127.0.0.1"] });
  b = await startControlPlane({ url: a.url, listen: true, heartbeatMs: 1000, jobs: JOBS, outboundAllow: ["127.0.0.1"] });
  d = await createDemoOrganization(a.database.db, a.app.services);
  const token = await a.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = new SimAgent({ baseUrl: urlOf(a), token: token.token, onCommand: answerBackup, now: () => a.clock.now() });
  await agent.enroll();
  await connectAgent();
  // Only the running environment is scheduled here (the stopped one's default time could fall in a moved clock's span).
  expect((await rw().patch(`/environments/${d.environments.stopped}/backup-schedule`, { enabled: false })).status).toBe(200);
  const sub = await rw().post("/webhooks", { url: `${hookBase}/backups`, events: ["backup.failed", "backup.missed"] });
  expect(sub.status).toBe(201);
  const owner = await addPerson(a.app, "org_owner", { organizationId: d.organization_id });
  stream = await SseStream.open(urlOf(b), { organization_id: d.organization_id }, { token: owner.token });
  expect(stream.status).toBe(200);
});

afterAll(async () => {
  stream?.close();
  disconnectAgent();
  await b?.stop();
  await a?.close();
  await new Promise((r) => hookServer?.close(r));
});

describe("backup schedule settings", () => {
  it("default daily with 7/4/3 retention, changed through the public API and read back through the platform API", async () => {
    const env = d.environments.running;
    const first = await ro().get(`/environments/${env}/backup-schedule`);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ environment_id: env, enabled: true, frequency: "daily", timezone: "UTC", retention: { daily: 7, weekly: 4, monthly: 3 } });
    expect(first.body.time).toMatch(/^0[0-5]:[0-5][0-9]$/);

    const bad = await rw().patch(`/environments/${env}/backup-schedule`, { time: "25:00" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_error");
    const none = await rw().patch(`/environments/${env}/backup-schedule`, { retention: { daily: 0, weekly: 0, monthly: 0 } });
    expect(none.status).toBe(400);
    expect(none.body.error).toBe("backup_schedule_invalid");
    expect((await publicClient(a.app, d.api_keys.org_ro).patch(`/environments/${env}/backup-schedule`, { enabled: false })).body.error).toBe("read_only_key");

    const changed = await rw().patch(`/environments/${env}/backup-schedule`, { frequency: "weekly", weekday: 3, time: "04:30", retention: { daily: 3 } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ frequency: "weekly", weekday: 3, time: "04:30", retention: { daily: 3, weekly: 4, monthly: 3 }, is_default: false });
    expect(new Date(changed.body.next_run_at).getUTCDay()).toBe(3);

    const owner = await addPerson(b.app, "org_owner", { organizationId: d.organization_id });
    const viaPlatform = await platformClient(b.app, owner.token).get(`/environments/${env}/backup-schedule`);
    expect(viaPlatform.status).toBe(200);
    expect(viaPlatform.body).toMatchObject({ frequency: "weekly", weekday: 3, time: "04:30" });
    // Both OpenAPI documents describe the routes and the schedule's schema; webhooks may subscribe to the new events.
    const publicDoc = JSON.parse((await a.app.inject({ method: "GET", url: "/api/public/v1/openapi.json" })).body);
    expect(Object.keys(publicDoc.paths["/environments/{id}/backup-schedule"]).sort()).toEqual(["get", "patch"]);
    expect(publicDoc.components.schemas.BackupSchedule.properties.retention.properties).toHaveProperty("monthly");
    expect(JSON.stringify(publicDoc.paths["/webhooks"])).toContain("backup.missed");
    const platformDoc = JSON.parse((await a.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).body);
    expect(Object.keys(platformDoc.paths["/environments/{env_id}/backup-schedule"]).sort()).toEqual(["get", "patch"]);

    const member = await addPerson(b.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
    expect((await platformClient(b.app, member.token).patch(`/environments/${env}/backup-schedule`, { enabled: false })).status).toBe(403);
  });
});

describe("the scheduler", () => {
  it("creates the due backup at its slot, once, with two replicas each running passes at the same time", async () => {
    const env = d.environments.running;
    // Due in about two minutes: a daily slot at the next whole minute plus one.
    slot = new Date(Math.floor(a.clock.now().getTime() / 60_000) * 60_000 + 120_000);
    const set = await rw().patch(`/environments/${env}/backup-schedule`, { frequency: "daily", time: hhmm(slot), retention: { daily: 7, weekly: 4, monthly: 3 } });
    expect(set.body.next_run_at).toBe(slot.toISOString());

    await passes(3);
    expect(await scheduledBackups(env)).toEqual([]);

    advanceTo(slot.getTime() + 1000);
    await passes(5);
    const made = await scheduledBackups(env);
    expect(made).toHaveLength(1);
    expect(made[0]!.comment).toBe(`Scheduled backup for ${slot.toISOString()}`);
    await waitFor(async () => (await scheduledBackups(env))[0]!.status === "completed", 10_000);
    expect(backupCommands).toHaveLength(1);

    // The agent ran it as a manual one, and the environment shows it.
    const listed = await ro().get(`/environments/${env}/backups`);
    expect(listed.body.data[0]).toMatchObject({ backup_type: "scheduled", status: "completed", size_bytes: 6144 });
    const op = await a.database.pool.query<{ trigger: string }>("select trigger from deployments where id = $1", [listed.body.data[0].task_id]);
    expect(op.rows[0]!.trigger).toBe("scheduled");
    const view = await ro().get(`/environments/${env}`);
    expect(view.body.last_backup).toMatchObject({ status: "completed", error: null, backup_type: "scheduled" });

    // Later passes the same day create nothing more.
    advance(HOUR);
    await passes(3);
    expect(await scheduledBackups(env)).toHaveLength(1);
  });

  it("a failed backup is a backup.failed event in the live stream and a webhook, and a red mark until a later backup succeeds", async () => {
    const env = d.environments.running;
    backupOutcome = { ok: false, message: "pg_dump: connection refused" };
    advanceTo(slot.getTime() + DAY + 60_000);
    await passes(2);
    await waitFor(async () => (await scheduledBackups(env)).some((x) => x.status === "failed"), 10_000);

    await stream.until((s) => s.of("backup.failed").length === 1, "backup.failed in the stream");
    expect(stream.of("backup.failed")[0]!.data).toMatchObject({ environment_id: env, project_id: d.project_id, reason: "pg_dump: connection refused", backup_type: "scheduled" });
    await waitFor(async () => hooks.some((h) => h.event === "backup.failed"), 15_000);
    const hook = JSON.parse(hooks.find((h) => h.event === "backup.failed")!.body);
    expect(hook).toMatchObject({ type: "backup.failed", organization_id: d.organization_id, data: { backup: { environment_id: env, reason: "pg_dump: connection refused" } } });
    expect(hook.data.backup.at).toMatch(/^\d{4}-\d\d-\d\dT/);

    const red = await ro().get(`/environments/${env}`);
    expect(red.body.last_backup).toMatchObject({ status: "failed", error: "pg_dump: connection refused" });
    const owner = await addPerson(b.app, "org_owner", { organizationId: d.organization_id });
    const dash = await platformClient(b.app, owner.token).get(`/organizations/${d.organization_id}/projects`);
    const dashEnv = dash.body.data[0].environments.find((e: { id: string }) => e.id === env);
    expect(dashEnv.last_backup).toMatchObject({ status: "failed" });

    // A later (manual) backup that succeeds clears it.
    backupOutcome = { ok: true };
    const manual = await rw().post(`/environments/${env}/backups`, {});
    expect(manual.status).toBe(202);
    await waitFor(async () => (await ro().get(`/environments/${env}`)).body.last_backup?.status === "completed", 10_000);
  });

  it("slots missed while the server is offline are reported once each, and caught up by one backup when it returns", async () => {
    const env = d.environments.running;
    const before = (await scheduledBackups(env)).length;
    disconnectAgent();
    await waitFor(async () => (await serverStatus()) === "offline", 5000);

    // Past the next slot and its 2-hour grace: missed, reported once however many passes.
    advanceTo(slot.getTime() + 2 * DAY + 3 * HOUR);
    await passes(3);
    expect(await scheduledBackups(env)).toHaveLength(before);
    await stream.until((s) => s.of("backup.missed").length === 1, "backup.missed in the stream");
    const missed = stream.of("backup.missed")[0]!.data;
    expect(missed).toMatchObject({ environment_id: env, project_id: d.project_id, reason: expect.stringContaining("offline") });
    const red = await ro().get(`/environments/${env}`);
    expect(red.body.last_backup).toMatchObject({ status: "missed", slot_at: missed.slot_at, error: expect.stringContaining("offline") });
    await waitFor(async () => hooks.some((h) => h.event === "backup.missed"), 15_000);
    expect(JSON.parse(hooks.find((h) => h.event === "backup.missed")!.body).data.backup).toMatchObject({ environment_id: env, slot_at: missed.slot_at });

    // Another day offline: one more slot missed, one more event.
    advanceTo(slot.getTime() + 3 * DAY + 3 * HOUR);
    await passes(3);
    await stream.until((s) => s.of("backup.missed").length === 2, "the second backup.missed");
    expect(await scheduledBackups(env)).toHaveLength(before);

    // Back online: one backup for the two skipped slots, and the mark clears when it completes.
    await connectAgent();
    await passes(4);
    const after = await scheduledBackups(env);
    expect(after).toHaveLength(before + 1);
    await waitFor(async () => (await ro().get(`/environments/${env}`)).body.last_backup?.status === "completed", 10_000);
    await passes(2);
    expect(await scheduledBackups(env)).toHaveLength(before + 1);
    expect(stream.of("backup.missed")).toHaveLength(2);
  });

  it("prunes scheduled backups by the retention rule when one completes; manual and pre-deploy backups stay", async () => {
    const env = d.environments.running;
    await rw().patch(`/environments/${env}/backup-schedule`, { retention: { daily: 3, weekly: 2, monthly: 2 } });
    // Forty days of history before today's backups, one a day, and two older backups of other kinds.
    const now = Date.now();
    const history: { id: string; createdAt: Date }[] = [];
    for (let i = 1; i <= 40; i++) {
      const { rows } = await a.database.pool.query<{ id: string; created_at: Date }>(
        `insert into backups (organization_id, environment_id, deployment_id, backup_type, status, size_bytes, files, created_at, completed_at)
         values ($1, $2, gen_random_uuid(), 'scheduled', 'completed', 1, '[]', $3, $3) returning id, created_at`,
        [d.organization_id, env, new Date(now - (i + 3) * DAY)],
      );
      history.push({ id: rows[0]!.id, createdAt: rows[0]!.created_at });
    }
    const { rows: others } = await a.database.pool.query<{ id: string }>(
      `insert into backups (organization_id, environment_id, deployment_id, backup_type, status, created_at, completed_at)
       values ($1, $2, gen_random_uuid(), 'manual', 'completed', $3, $3), ($1, $2, gen_random_uuid(), 'pre_deploy', 'completed', $3, $3) returning id`,
      [d.organization_id, env, new Date(now - 90 * DAY)],
    );

    advanceTo(slot.getTime() + 4 * DAY + 60_000);
    await passes(2); // creates today's backup (the agent completes it)
    await waitFor(async () => (await scheduledBackups(env)).every((x) => x.status !== "pending"), 10_000);
    await passes(2); // the retention pass after it completed

    const completed = (await scheduledBackups(env)).filter((x) => x.status === "completed");
    const all = [...history, ...completed.filter((x) => !history.some((h) => h.id === x.id)).map((x) => ({ id: x.id, createdAt: x.created_at }))];
    const expected = backupsToKeep(all, { keepDaily: 3, keepWeekly: 2, keepMonthly: 2 });
    expect(new Set(completed.map((x) => x.id))).toEqual(expected);
    expect(expected.size).toBeLessThan(all.length);
    const { rows: kept } = await a.database.pool.query("select id from backups where id = any($1::uuid[])", [others.map((o) => o.id)]);
    expect(kept).toHaveLength(2);
    // Failed scheduled backups are records of what happened: not pruned.
    expect((await scheduledBackups(env)).filter((x) => x.status === "failed")).toHaveLength(1);
  });

  it("a backup whose operation ends without the agent's result (cancelled, timed out) is a failed backup too, never pending for ever", async () => {
    const env = d.environments.running;
    backupOutcome = { silent: true };
    const manual = await rw().post(`/environments/${env}/backups`, { comment: "before the upgrade" });
    expect(manual.status).toBe(202);
    const failedBefore = stream.of("backup.failed").length;
    expect((await rw().post(`/deployments/${manual.body.task_id}/cancel`)).status).toBe(200);
    await passes(1);
    const listed = (await ro().get(`/environments/${env}/backups`)).body.data.find((x: { id: string }) => x.id === manual.body.backup_id);
    expect(listed).toMatchObject({ status: "failed", error_message: expect.stringContaining("Cancelled by") });
    await stream.until((s) => s.of("backup.failed").length === failedBefore + 1, "backup.failed of the cancelled backup");
    expect(stream.of("backup.failed").at(-1)!.data).toMatchObject({ backup_id: manual.body.backup_id, backup_type: "manual" });
    expect((await ro().get(`/environments/${env}`)).body.last_backup).toMatchObject({ status: "failed", backup_id: manual.body.backup_id });
    backupOutcome = { ok: true };
  });
});
