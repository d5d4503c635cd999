// The support console's API and the customer's audit log: only portal admins reach the
// console; every command they issue needs a reason and is in the organisation's audit log
// (even when it is refused), which its owners read. No agent runs here: commands wait in
// the outbox, and what an agent would report is set in SQL.
// test/e2e/support-console.e2e.test.ts runs the same console against a real agent.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { openedCommand } from "../support/stored-commands.ts";

let cp: TestControlPlane;
let demo: DemoOrganization;
let other: DemoOrganization;
let staff: Person;
let owner: Person;
let orgAdmin: Person;
let member: Person;
let projectAdmin: Person;
let otherOwner: Person;

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
const DENIED = "You don't have permission to use the support console.";
const REASON = "Customer ticket #4711: ERP not answering";

beforeAll(async () => {
  cp = await startControlPlane();
  demo = await createDemoOrganization(cp.database.db, cp.app.services, { name: "Acme Widgets" });
  other = await createDemoOrganization(cp.database.db, cp.app.services, { name: "Globex" });
  const where = { organizationId: demo.organization_id, projectId: demo.project_id };
  staff = await addPerson(cp.app, "portal_admin", where);
  owner = await addPerson(cp.app, "org_owner", where);
  orgAdmin = await addPerson(cp.app, "org_admin", where);
  member = await addPerson(cp.app, "org_member", where);
  projectAdmin = await addPerson(cp.app, "project_admin", where);
  otherOwner = await addPerson(cp.app, "org_owner", { organizationId: other.organization_id, projectId: other.project_id });
}, 60_000);
afterAll(async () => cp?.close());

const issue = (p: Person, body: Record<string, unknown>, serverId = demo.server_id) => p.api.post(`/support/servers/${serverId}/commands`, body);
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const auditOf = async (p: Person, orgId = demo.organization_id): Promise<any[]> => {
  const res = await p.api.get(`/organizations/${orgId}/audit-log?limit=100`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};

describe("who may use the console", () => {
  it("refuses everyone but portal admins with 403, before looking at the request", async () => {
    for (const p of [owner, orgAdmin, member, projectAdmin, otherOwner]) {
      for (const res of [
        await p.api.get("/support/search?q=Acme"),
        await p.api.get(`/support/servers/${demo.server_id}`),
        await issue(p, { type: "restart", environment_id: demo.environments.running, reason: REASON }),
        await issue(p, { type: "shell", reason: "" }),
        await p.api.get("/support/commands/00000000-0000-4000-8000-000000000000"),
        await p.api.get("/support/audit-log"),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ error: "permission_denied", message: DENIED });
      }
    }
    expect((await q("select count(*)::int as n from agent_commands where server_id = $1", [demo.server_id]))[0].n).toBe(0);
    expect((await q("select count(*)::int as n from audit_log"))[0].n).toBe(0);
  });

  it("needs a session", async () => {
    const res = await cp.app.inject({ method: "GET", url: "/api/v1/support/search?q=Acme" });
    expect(res.statusCode).toBe(401);
  });
});

describe("finding things", () => {
  it("finds organisations, servers (name, hostname, id) and environments (name, id) of any organisation", async () => {
    const byName = await staff.api.get("/support/search?q=acme");
    expect(byName.status).toBe(200);
    expect(byName.body.organizations).toEqual([{ id: demo.organization_id, name: "Acme Widgets", plan: "starter" }]);

    const host = (await q("select hostname from servers where id = $1", [other.server_id]))[0].hostname as string;
    const byHost = await staff.api.get(`/support/search?q=${encodeURIComponent(host)}`);
    expect(byHost.body.servers).toEqual([expect.objectContaining({ id: other.server_id, hostname: host, organization_id: other.organization_id, organization_name: "Globex" })]);
    const byServerId = await staff.api.get(`/support/search?q=${other.server_id.slice(0, 13)}`);
    expect(byServerId.body.servers.map((s: { id: string }) => s.id)).toEqual([other.server_id]);

    const byEnvId = await staff.api.get(`/support/search?q=${demo.environments.stopped}`);
    expect(byEnvId.body.environments).toEqual([
      expect.objectContaining({ id: demo.environments.stopped, name: "staging", status: "stopped", organization_id: demo.organization_id, server_id: demo.server_id }),
    ]);
    const byEnvName = await staff.api.get("/support/search?q=staging");
    expect(byEnvName.body.environments.map((e: { id: string }) => e.id).sort()).toEqual([demo.environments.stopped, other.environments.stopped].sort());

    // LIKE wildcards are matched literally.
    expect((await staff.api.get("/support/search?q=%25")).body).toEqual({ organizations: [], servers: [], environments: [] });
    expect((await staff.api.get("/support/search?q=")).status).toBe(400);
  });
});

describe("a server", () => {
  it("shows its organisation, agent state and versions, latest figures and environments", async () => {
    await q(
      `update servers set enrolled_at = now() - interval '1 day', last_seen_at = now() - interval '10 minutes', status = 'offline',
         agent_version = '1.4.2', os = 'debian 12', arch = 'x64', docker_version = '24.0.7' where id = $1`,
      [demo.server_id],
    );
    await q(
      `insert into server_stats (server_id, sampled_at, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb, load1, load5, load15, containers_running, containers_total)
       values ($1, now(), 12.5, 2048, 8192, 40, 160, 0.5, 0.4, 0.3, 3, 4)`,
      [demo.server_id],
    );
    const res = await staff.api.get(`/support/servers/${demo.server_id}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      id: demo.server_id,
      organization: { id: demo.organization_id, name: "Acme Widgets" },
      agent: { state: "offline", connected_at: null, agent_version: "1.4.2", os: "debian 12", arch: "x64", docker_version: "24.0.7", last_seen_at: expect.any(String) },
      stats: { cpu_percent: 12.5, ram_used_mb: 2048, ram_total_mb: 8192, containers_running: 3 },
      recent_commands: [],
    });
    expect(res.body.environments.map((e: { id: string; status: string }) => [e.id, e.status]).sort()).toEqual(
      [
        [demo.environments.running, "running"],
        [demo.environments.stopped, "stopped"],
      ].sort(),
    );
    // A live link (a row in agent_sessions) and a recent heartbeat: online.
    await q("insert into agent_sessions (server_id, replica_id, connection_id, connected_at) values ($1, 'r1', 'c1', now())", [demo.server_id]);
    await q("update servers set last_seen_at = now(), status = 'online' where id = $1", [demo.server_id]);
    expect((await staff.api.get(`/support/servers/${demo.server_id}`)).body.agent).toMatchObject({ state: "online", connected_at: expect.any(String) });
    await q("delete from agent_sessions where server_id = $1", [demo.server_id]);

    expect((await staff.api.get("/support/servers/00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });
});

describe("issuing commands", () => {
  it("refuses a request without a real reason, an unknown type, or anything shell-like, and sends nothing", async () => {
    const env = demo.environments.running;
    for (const body of [
      { type: "restart", environment_id: env },
      { type: "restart", environment_id: env, reason: "" },
      { type: "restart", environment_id: env, reason: "ok" },
      { type: "restart", environment_id: env, reason: "       " },
      { type: "shell", environment_id: env, reason: REASON },
      { type: "exec", reason: REASON, command: "rm -rf /" },
      { type: "restart", environment_id: env, reason: REASON, command: "rm -rf /" },
      { type: "logs.tail", environment_id: env, reason: REASON, lines: 10_001 },
      { type: "logs.tail", environment_id: env, reason: REASON, lines: 0 },
      { type: "restart", reason: REASON },
      { type: "diagnostics", environment_id: env, reason: REASON },
    ]) {
      const res = await issue(staff, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe("validation_error");
    }
    const unknown = await issue(staff, { type: "shell", environment_id: env, reason: REASON });
    expect(unknown.body.details).toEqual([{ path: "body/type", message: "must be equal to one of the allowed values" }]);
    // The documented body allows exactly the protocol's support commands and nothing that could carry a shell string.
    const doc = JSON.parse((await cp.app.inject({ method: "GET", url: "/api/v1/openapi.json" })).body);
    const op = doc.paths["/support/servers/{server_id}/commands"].post;
    const schema = op.requestBody.content["application/json"].schema;
    expect(schema.properties.type.enum).toEqual(["restart", "stop", "start", "redeploy", "backup", "logs.tail", "diagnostics"]);
    expect(Object.keys(schema.properties).sort()).toEqual(["environment_id", "lines", "reason", "type"]);
    expect(schema.additionalProperties).toBe(false);
    expect(op.tags).toEqual(["Support"]);
    expect(doc.paths["/organizations/{organization_id}/audit-log"].get.tags).toEqual(["Audit log"]);
    const blank = await issue(staff, { type: "restart", environment_id: env, reason: "       " });
    expect(blank.body.details).toEqual([{ path: "body/reason", message: "must not be blank" }]);
    expect((await q("select count(*)::int as n from agent_commands where server_id = $1", [demo.server_id]))[0].n).toBe(0);
  });

  it("restarts through the normal operation path; the owner sees who, what, why, and the result", async () => {
    const res = await issue(staff, { type: "restart", environment_id: demo.environments.running, reason: REASON });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const { audit_entry_id, deployment_id, command_id } = res.body;
    expect(deployment_id).toEqual(expect.any(String));
    const [op] = await q("select kind, status, triggered_by from deployments where id = $1", [deployment_id]);
    expect(op).toMatchObject({ kind: "restart", triggered_by: staff.userId });
    const [cmd] = await q("select command_id, type, issued_by, sealed, signed from agent_commands where deployment_id = $1", [deployment_id]);
    expect(cmd).toMatchObject({ command_id, type: "restart", issued_by: `user:${staff.userId}` });
    expect(openedCommand(cmd).signature).toEqual(expect.any(String));

    // One active operation per environment: a second restart is refused, and still recorded.
    const busy = await issue(staff, { type: "restart", environment_id: demo.environments.running, reason: "Second try while the first runs" });
    expect(busy.status).toBe(409);

    let entries = await auditOf(owner);
    const entry = entries.find((e) => e.id === audit_entry_id);
    expect(entry).toMatchObject({
      organization_id: demo.organization_id,
      actor: { id: staff.userId, email: staff.email, name: "portal_admin" },
      action: "support.restart",
      target: { type: "environment", id: demo.environments.running, name: "production" },
      reason: REASON,
      deployment_id,
      command_id,
      result: { state: "pending" },
    });
    expect(entries[0]).toMatchObject({ reason: "Second try while the first runs", result: { state: "refused", summary: expect.stringContaining("already") } });

    // The agent reports success: the entry shows it.
    await q("update deployments set status = 'success', completed_at = now() where id = $1", [deployment_id]);
    entries = await auditOf(owner);
    expect(entries.find((e) => e.id === audit_entry_id).result).toEqual({ state: "succeeded", summary: "restart succeeded" });

    // The server's recent commands list it.
    const server = (await staff.api.get(`/support/servers/${demo.server_id}`)).body;
    expect(server.recent_commands[0]).toMatchObject({ command_id, type: "restart", issued_by: `user:${staff.userId}`, deployment_id });
  });

  it("records a command refused by the rules (start on a running environment) with why", async () => {
    const res = await issue(staff, { type: "start", environment_id: demo.environments.running, reason: "Customer says it is down" });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe("environment_not_stopped");
    const entry = (await auditOf(owner))[0];
    expect(entry).toMatchObject({ action: "support.start", reason: "Customer says it is down", command_id: null, deployment_id: null, result: { state: "refused", summary: res.body.message } });
  });

  it("refuses an environment of another organisation as not found, without naming it in the log", async () => {
    const res = await issue(staff, { type: "restart", environment_id: other.environments.running, reason: REASON });
    expect(res.status).toBe(404);
    const entry = (await auditOf(owner))[0];
    expect(entry).toMatchObject({ action: "support.restart", target: { id: other.environments.running, name: null }, result: { state: "refused" } });
    expect((await q("select count(*)::int as n from deployments where environment_id = $1", [other.environments.running]))[0].n).toBe(0);
  });

  it("tails logs as a signed command; the result is polled by command, and the owner sees the lines", async () => {
    const res = await issue(staff, { type: "logs.tail", environment_id: demo.environments.stopped, lines: 20, reason: REASON });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    const { command_id, audit_entry_id } = res.body;
    expect(res.body.deployment_id).toBeNull();
    let cmd = await staff.api.get(`/support/commands/${command_id}`);
    expect(cmd.status).toBe(200);
    expect(cmd.body).toMatchObject({
      type: "logs.tail",
      state: "pending",
      server_id: demo.server_id,
      organization_id: demo.organization_id,
      params: { environment_id: demo.environments.stopped, lines: 20 },
      result: null,
      audit_entry: { id: audit_entry_id, reason: REASON },
    });
    // Default line count.
    const dflt = await issue(staff, { type: "logs.tail", environment_id: demo.environments.stopped, reason: REASON });
    expect((await staff.api.get(`/support/commands/${dflt.body.command_id}`)).body.params.lines).toBe(200);

    await q("update agent_commands set state = 'succeeded', completed_at = now(), result = $2 where command_id = $1", [
      command_id,
      JSON.stringify({ container: "berth-x-erp", lines: ["booting", "ready"], truncated: false }),
    ]);
    cmd = await staff.api.get(`/support/commands/${command_id}`);
    expect(cmd.body).toMatchObject({ state: "succeeded", result: { lines: ["booting", "ready"] }, summary: "2 log lines of berth-x-erp" });

    const entry = (await auditOf(owner)).find((e) => e.id === audit_entry_id);
    expect(entry).toMatchObject({ action: "support.logs.tail", target: { type: "environment", name: "staging" }, result: { state: "succeeded", summary: "2 log lines of berth-x-erp" } });
    const detail = await owner.api.get(`/organizations/${demo.organization_id}/audit-log/${audit_entry_id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.output).toMatchObject({ lines: ["booting", "ready"] });
    expect((await otherOwner.api.get(`/organizations/${other.organization_id}/audit-log/${audit_entry_id}`)).status).toBe(404);
  });

  it("runs diagnostics on the server; a failure shows as failed with the agent's message", async () => {
    const res = await issue(staff, { type: "diagnostics", reason: REASON });
    expect(res.status).toBe(202);
    await q("update agent_commands set state = 'failed', completed_at = now(), error = $2 where command_id = $1", [
      res.body.command_id,
      JSON.stringify({ code: "docker_unreachable", message: "Docker is not answering" }),
    ]);
    const entry = (await auditOf(owner)).find((e) => e.id === res.body.audit_entry_id);
    expect(entry).toMatchObject({ action: "support.diagnostics", target: { type: "server", id: demo.server_id }, result: { state: "failed", summary: "Docker is not answering" } });
    expect(entry.target.name).toMatch(/^demo-server-/);
  });

  it("backs up and redeploys as ordinary operations of the environment", async () => {
    const env = demo.environments.stopped;
    const backup = await issue(staff, { type: "backup", environment_id: env, reason: "Before the customer's migration" });
    expect(backup.status, JSON.stringify(backup.body)).toBe(202);
    const [op] = await q("select kind, triggered_by from deployments where id = $1", [backup.body.deployment_id]);
    expect(op).toEqual({ kind: "backup", triggered_by: staff.userId });
    const [record] = await q("select status, comment from backups where deployment_id = $1", [backup.body.deployment_id]);
    expect(record).toEqual({ status: "pending", comment: "Support: Before the customer's migration" });
    expect((await q("select type from agent_commands where command_id = $1", [backup.body.command_id]))[0].type).toBe("backup");
    await q("update deployments set status = 'failed', completed_at = now(), error_message = 'disk full' where id = $1", [backup.body.deployment_id]);
    expect((await auditOf(owner)).find((e) => e.id === backup.body.audit_entry_id).result).toEqual({ state: "failed", summary: "disk full" });

    const redeploy = await issue(staff, { type: "redeploy", environment_id: env, reason: "Pick up the fixed image" });
    expect(redeploy.status).toBe(202);
    expect((await q("select kind from deployments where id = $1", [redeploy.body.deployment_id]))[0].kind).toBe("redeploy");
    expect((await q("select type from agent_commands where command_id = $1", [redeploy.body.command_id]))[0].type).toBe("redeploy");
  });

  it("an unknown server is 404", async () => {
    expect((await issue(staff, { type: "diagnostics", reason: REASON }, "00000000-0000-4000-8000-000000000000")).status).toBe(404);
    expect((await staff.api.get("/support/commands/00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });
});

describe("the audit log", () => {
  it("owners and portal admins read it; admins and members of the organisation get 403; others 404", async () => {
    expect((await auditOf(owner)).length).toBeGreaterThan(3);
    expect((await auditOf(staff)).length).toBeGreaterThan(3);
    for (const p of [orgAdmin, member, projectAdmin]) {
      const res = await p.api.get(`/organizations/${demo.organization_id}/audit-log`);
      expect(res.status).toBe(403);
      expect(res.body.message).toBe("You don't have permission to read the audit log.");
    }
    const stranger = await otherOwner.api.get(`/organizations/${demo.organization_id}/audit-log`);
    expect(stranger.status).toBe(404);
    expect(stranger.body.message).toBe("Organization not found");
    // Their own organisation's log holds nothing of Acme's.
    expect(await auditOf(otherOwner, other.organization_id)).toEqual([]);
  });

  it("pages newest first with a cursor", async () => {
    const all = await auditOf(owner);
    const first = await owner.api.get(`/organizations/${demo.organization_id}/audit-log?limit=2`);
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(0, 2).map((e) => e.id));
    expect(first.body.pagination).toMatchObject({ has_more: true, total: all.length });
    const second = await owner.api.get(`/organizations/${demo.organization_id}/audit-log?limit=2&cursor=${encodeURIComponent(first.body.pagination.next_cursor)}`);
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual(all.slice(2, 4).map((e) => e.id));
    const times = all.map((e) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it("portal admins see every organisation's log in one list", async () => {
    await issue(staff, { type: "diagnostics", reason: "Globex asked for a health check" }, other.server_id);
    const res = await staff.api.get("/support/audit-log?limit=100");
    expect(res.status).toBe(200);
    const orgs = new Set(res.body.data.map((e: { organization_id: string }) => e.organization_id));
    expect(orgs).toEqual(new Set([demo.organization_id, other.organization_id]));
    const only = await staff.api.get(`/support/audit-log?organization_id=${other.organization_id}`);
    expect(only.body.data).toEqual([expect.objectContaining({ reason: "Globex asked for a health check", organization_id: other.organization_id })]);
    expect(await auditOf(otherOwner, other.organization_id)).toHaveLength(1);
  });
});
