// Issue 32, findings 2 and 3: what support staff see of a command is its type's allow-list,
// and no secret a command carries stays in the control plane's database in clear. Every
// command type is issued with every field set (secrets marked), plus a redeploy the support
// console dispatches with a real environment variable, ERP master password and add-on token;
// a simulated agent takes them over the real link (a first connection that never answers,
// then a reconnect that gets the same signed commands again). Then the support console's
// HTTP answers, the audit log, the control plane's log and every table are searched.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMAND_TYPES, type BackupParams, type DeployParams, type RestoreParams, type SignedCommand } from "@berth/protocol";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { shownParams } from "../../apps/control-plane/src/modules/agents/shown-params.ts";
import type { TypedCommand } from "../../apps/control-plane/src/modules/agents/agent-commands.ts";
import { DEFAULT_RETENTION, runRetention } from "../../apps/control-plane/src/modules/retention/retention.ts";
import { commandExamples, examplesCoverSchemas, SECRET_MARK } from "../support/command-examples.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { logLines } from "../support/log-lines.ts";
import { addPerson, type Person } from "../support/people.ts";
import { SimAgent } from "../support/sim-agent.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let demo: DemoOrganization;
let staff: Person;
let owner: Person;
let agent: SimAgent;
const log = logLines();
const ENV_SECRET = "envValue-9d0c1b6e-never-in-clear";
const ADDON_TOKEN = "glpat-addonToken-5b2f-never-in-clear";
const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, outboxSweepMs: 500, logger: { level: "debug", stream: log.stream } });
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  staff = await addPerson(cp.app, "portal_admin", { organizationId: demo.organization_id });
  owner = await addPerson(cp.app, "org_owner", { organizationId: demo.organization_id });
  const address = cp.app.server.address() as { port: number };
  const token = await cp.app.services.enrollment.newToken(demo.organization_id, demo.server_id, null);
  agent = new SimAgent({ baseUrl: `http://127.0.0.1:${address.port}`, token: token.token });
  await agent.enroll();
}, 60_000);
afterAll(async () => {
  agent?.close();
  await cp?.close();
});

/** Every table of the database (the job queue's too), every column, as text. */
async function everyTable(): Promise<string> {
  const tables = await q(`select format('%I.%I', table_schema, table_name) as t from information_schema.tables
                          where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`);
  const parts: string[] = [];
  for (const { t } of tables) parts.push(`${t}: ${JSON.stringify(await q(`select x::text from ${t} x`))}`);
  return parts.join("\n");
}

/** The secrets of a command as the agent got it: every value staff must never see. */
function secretsOf(cmd: SignedCommand): string[] {
  const p = cmd.params as Partial<DeployParams & BackupParams & RestoreParams>;
  const out: (string | undefined)[] = [p.admin_passwd, p.admin_login?.password, ...Object.values(p.env ?? {})];
  for (const a of p.addon_repositories ?? []) out.push(a.token, a.ssh_private_key);
  out.push(p.upload?.token, p.source?.path, p.archive?.path);
  return out.filter((s): s is string => typeof s === "string");
}

const examples = () => commandExamples(demo.environments.running);
const issuedIds: string[] = [];
let redeployId: string;
let firstReceipt: SignedCommand[] = [];

describe("the examples", () => {
  it("set every field of every command type, as the protocol accepts them", () => {
    expect(examplesCoverSchemas(examples())).toEqual(COMMAND_TYPES.map((type) => ({ type, missing: [], valid: true })));
  });
});

describe("commands with secrets", () => {
  it("are stored sealed: no secret in any table while they wait for the agent", async () => {
    const all = examples();
    for (const type of COMMAND_TYPES) {
      // The examples are plain JSON, checked against the protocol by examplesCoverSchemas above.
      const command = { type, params: all[type] } as TypedCommand;
      const row = await cp.app.services.agentCommands.issue({ organizationId: demo.organization_id, serverId: demo.server_id, ...command, issuedBy: `user:${staff.userId}` });
      issuedIds.push(row.commandId);
    }
    // The support console dispatches a real redeploy: the environment's variable, its ERP
    // master password and an add-on repository's token go into the command.
    const rw = publicClient(cp.app, demo.api_keys.org_rw);
    expect((await rw.put(`/environments/${demo.environments.running}/variables/API_TOKEN`, { value: ENV_SECRET })).status).toBe(201);
    const addon = await rw.post(`/environments/${demo.environments.running}/addon-repositories`, { git_url: "https://gitlab.example.com/acme/private.git", branch: "main", token: ADDON_TOKEN });
    expect(addon.status, JSON.stringify(addon.body)).toBe(201);
    const res = await staff.api.post(`/support/servers/${demo.server_id}/commands`, { type: "redeploy", environment_id: demo.environments.running, reason: "Customer asked for a redeploy" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    redeployId = res.body.command_id;
    const diag = await staff.api.post(`/support/servers/${demo.server_id}/commands`, { type: "diagnostics", reason: "Checking the server" });
    expect(diag.status, JSON.stringify(diag.body)).toBe(202);

    const dump = await everyTable();
    expect(dump).not.toContain(SECRET_MARK);
    expect(dump).not.toContain(ENV_SECRET);
    expect(dump).not.toContain(ADDON_TOKEN);
    const [{ n }] = await q("select count(*)::int as n from agent_commands where server_id = $1 and (sealed is null or signed is not null)", [demo.server_id]);
    expect(n).toBe(0);
  }, 60_000);

  it("reach the agent exactly as signed, and again the same after a reconnect", async () => {
    // A first link whose answers are lost: the commands stay pending.
    const answer = agent.send.bind(agent);
    agent.send = () => {};
    await agent.connect();
    await agent.until(() => agent.received.length >= issuedIds.length + 2, 10_000, "every command");
    firstReceipt = [...agent.received];
    agent.close();
    await agent.until(() => agent.closes.length === 1, 5000, "the close");
    agent.received.length = 0;
    agent.send = answer;
    await agent.connect();
    await agent.until(() => agent.received.length >= issuedIds.length + 2, 10_000, "every command again");
    expect(agent.rejected).toEqual([]);
    const byId = (list: SignedCommand[]) => Object.fromEntries(list.map((c) => [c.command_id, c]));
    expect(byId(agent.received)).toEqual(byId(firstReceipt));
    const all = examples();
    for (const [i, type] of COMMAND_TYPES.entries()) {
      const got = agent.received.find((c) => c.command_id === issuedIds[i])!;
      expect(got.type).toBe(type);
      expect(Object.keys(got.params).sort()).toEqual(Object.keys(all[type]).sort());
    }
    const redeploy = agent.received.find((c) => c.command_id === redeployId)!;
    expect(secretsOf(redeploy)).toEqual(expect.arrayContaining([ENV_SECRET, ADDON_TOKEN]));
    expect(redeploy.params.admin_passwd).toEqual(expect.any(String));
  }, 60_000);

  it("leave nothing secret once the agent took them: no sealed copy, nothing in any table", async () => {
    await waitUntil("every command accepted", async () => (await q("select 1 from agent_commands where server_id = $1 and state = 'pending'", [demo.server_id])).length === 0, { timeoutMs: 10_000, intervalMs: 100 });
    const rows = await q("select command_id, state, sealed, signed from agent_commands where server_id = $1", [demo.server_id]);
    expect(rows.filter((r) => r.state === "pending")).toEqual([]);
    expect(rows.filter((r) => r.sealed !== null || r.signed !== null)).toEqual([]);
    const dump = await everyTable();
    for (const secret of [SECRET_MARK, ...agent.received.flatMap(secretsOf)]) expect(dump, secret).not.toContain(secret);
  }, 30_000);

  it("show staff only each type's allowed fields, in every answer of the console, the audit log and the logs", async () => {
    const secrets = [SECRET_MARK, ...agent.received.flatMap(secretsOf)];
    const answers: string[] = [];
    const server = await staff.api.get(`/support/servers/${demo.server_id}`);
    expect(server.status).toBe(200);
    answers.push(JSON.stringify(server.body));
    for (const id of [...issuedIds, redeployId]) {
      const view = await staff.api.get(`/support/commands/${id}`);
      expect(view.status).toBe(200);
      answers.push(JSON.stringify(view.body));
    }
    answers.push(JSON.stringify((await staff.api.get("/support/audit-log")).body));
    const ownLog = await owner.api.get(`/organizations/${demo.organization_id}/audit-log`);
    expect(ownLog.status).toBe(200);
    answers.push(JSON.stringify(ownLog.body));
    expect(ownLog.body.data.length).toBeGreaterThanOrEqual(2);
    for (const entry of ownLog.body.data) answers.push(JSON.stringify((await owner.api.get(`/organizations/${demo.organization_id}/audit-log/${entry.id}`)).body));
    answers.push(JSON.stringify(await q("select * from audit_log where organization_id = $1", [demo.organization_id])));
    answers.push(log.lines.join("\n"));
    for (const text of answers) for (const secret of secrets) expect(text, secret).not.toContain(secret);

    // What staff do see: the deploy's settings, the variables' names, the repositories without credentials.
    const deploy = (await staff.api.get(`/support/commands/${issuedIds[0]}`)).body.params;
    expect(deploy).toMatchObject({
      erp_version: "17.0",
      git: { url: "https://git.example.com/acme/erp.git", branch: "main", commit: "abcdef1" },
      env: { DATABASE_PASSWORD: "[redacted]", TZ: "[redacted]" },
      admin_login: { version: "v7" },
      addon_repositories: [{ name: "acme-addons", url: "https://git.example.com/acme/addons.git" }],
      archive: { neutralize: true, file: { name: "backup.zip" } },
    });
    expect(deploy).not.toHaveProperty("admin_passwd");
    expect(deploy.addon_repositories[0]).not.toHaveProperty("token");
    expect(deploy.addon_repositories[0]).not.toHaveProperty("ssh_private_key");
    expect(deploy.archive).not.toHaveProperty("path");
    const backup = (await staff.api.get(`/support/commands/${issuedIds[COMMAND_TYPES.indexOf("backup")]}`)).body.params;
    expect(Object.keys(backup.upload).sort()).toEqual(["expires_at", "path"]);
    const restore = (await staff.api.get(`/support/commands/${issuedIds[COMMAND_TYPES.indexOf("restore")]}`)).body.params;
    expect(Object.keys(restore.source).sort()).toEqual(["environment_id", "expires_at", "files"]);
    expect((await staff.api.get(`/support/commands/${redeployId}`)).body.params.env).toEqual({ API_TOKEN: "[redacted]" });
  }, 60_000);

  it("a field the allow-list does not know is never shown (signing refuses it anyway)", async () => {
    const params = { environment_id: demo.environments.running, lines: 5, future_secret: `${SECRET_MARK}-future` };
    expect(shownParams("logs.tail", params)).toEqual({ environment_id: demo.environments.running, lines: 5 });
    expect(shownParams("no.such.type", params)).toEqual({});
    await expect(
      cp.app.services.agentCommands.issue({ organizationId: demo.organization_id, serverId: demo.server_id, type: "logs.tail", params, issuedBy: "system:test" }),
    ).rejects.toThrow(/future_secret: Unexpected property/);
  });

  it("are deleted by retention once ended and old, except those an audit entry names", async () => {
    const audited = (await q("select command_id from audit_log where command_id is not null and organization_id = $1", [demo.organization_id])).map((r) => r.command_id);
    expect(audited.length).toBeGreaterThanOrEqual(2);
    await q("update agent_commands set state = 'succeeded', completed_at = now() where server_id = $1 and state = 'accepted'", [demo.server_id]);
    await q("update agent_commands set created_at = now() - interval '91 days' where server_id = $1", [demo.server_id]);
    const run = await runRetention(cp.database.pool, DEFAULT_RETENTION, new Date());
    expect(run.commands).toBeGreaterThanOrEqual(COMMAND_TYPES.length);
    const left = await q("select command_id, state from agent_commands where server_id = $1", [demo.server_id]);
    expect(left.filter((r) => r.state !== "pending").map((r) => r.command_id).sort()).toEqual([...audited].sort());
    // The audit log still tells what those did.
    const ownLog = await owner.api.get(`/organizations/${demo.organization_id}/audit-log`);
    expect(JSON.stringify(ownLog.body)).toContain("support.redeploy");
  }, 30_000);
});
