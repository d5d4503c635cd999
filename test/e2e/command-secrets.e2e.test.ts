// Issue 32, finding 3, end to end: a real control plane, the real agent process and Docker.
// A deploy carries an environment variable, the ERP master password (admin_passwd) and the
// administrator's login password; a backup carries its upload token. Once they ran, no table
// of the control plane's database holds any of them in clear, and the outbox keeps no copy.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "../support/agent-process.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { removeEnvironmentObjects, useTestImages } from "../support/real-agent.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let envId: string;
let api: ReturnType<typeof publicClient>;
const ENV_SECRET = "e2eEnvSecret-4f1a-never-in-clear";
const secrets: string[] = [ENV_SECRET];
const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  await useTestImages(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  const address = cp.app.server.address() as { port: number };
  const token = await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = await AgentProcess.create();
  await agent.enroll(`http://127.0.0.1:${address.port}`, token.token);
  agent.start();
  api = publicClient(cp.app, d.api_keys.org_rw);
  const project = await api.post("/projects", { name: "Secrets shop", server_id: d.server_id, erp_version: "17.0" });
  const env = await api.post("/environments", { project_id: project.body.id, name: "production", cpu_cores: 1, ram_mb: 1024 });
  envId = env.body.id;
  await waitUntil("agent online", () => cp.app.gateway.isConnected(d.server_id), { timeoutMs: 60_000, intervalMs: 250 });
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  await removeEnvironmentObjects(envId ? [envId] : []);
});

async function act(action: string, body?: object): Promise<string> {
  const res = await api.post(`/environments/${envId}/${action}`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  let status = "queued";
  await waitUntil(`${action} to finish`, async () => {
    status = (await api.get(`/deployments/${res.body.task_id}`)).body.status;
    return ["completed", "failed", "cancelled"].includes(status);
  }, { timeoutMs: 150_000, intervalMs: 500, detail: () => agent.output.slice(-3000) });
  return status;
}

/** Every table of the database, every column, as text. */
async function everyTable(): Promise<string> {
  const tables = await q(`select format('%I.%I', table_schema, table_name) as t from information_schema.tables
                          where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`);
  const parts: string[] = [];
  for (const { t } of tables) parts.push(`${t}: ${JSON.stringify(await q(`select x::text from ${t} x`))}`);
  return parts.join("\n");
}

it("deploys and backs up with secrets; afterwards no table holds one in clear", async () => {
  expect((await api.put(`/environments/${envId}/variables/SHOP_API_KEY`, { value: ENV_SECRET })).status).toBe(201);
  const master = await api.post(`/environments/${envId}/admin-password/rotate`);
  expect(master.status, JSON.stringify(master.body)).toBe(200);
  secrets.push(master.body.admin_password);
  const login = await api.post(`/environments/${envId}/admin-login/rotate`);
  expect(login.status, JSON.stringify(login.body)).toBe(200);
  secrets.push(...Object.values(login.body as Record<string, unknown>).filter((v): v is string => typeof v === "string" && v.length >= 12 && !/^\d{4}-|^[0-9a-f-]{36}$/.test(v)));
  expect(secrets.length).toBeGreaterThanOrEqual(3);

  expect(await act("deploy")).toBe("completed");
  expect(await act("backups", { comment: "with its upload token" })).toBe("completed");

  const commands = await q("select type, state, sealed, signed, shown_params from agent_commands where server_id = $1", [d.server_id]);
  expect(commands.map((c) => [c.type, c.state])).toEqual(expect.arrayContaining([["deploy", "succeeded"], ["backup", "succeeded"]]));
  expect(commands.filter((c) => c.sealed !== null || c.signed !== null)).toEqual([]);
  const deploy = commands.find((c) => c.type === "deploy")!;
  expect(deploy.shown_params.env).toEqual({ SHOP_API_KEY: "[redacted]" });
  const dump = await everyTable();
  for (const secret of secrets) expect(dump, secret).not.toContain(secret);
}, 400_000);
