// End to end through the public API: a real control plane, the real agent process and the
// real Docker engine deploy an ERP stack from the locally built images; its data survives
// restart, stop/start and redeploy, and destroy removes it.
import Docker from "dockerode";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "../support/agent-process.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy.ts";
import { removeEnvironmentObjects, useTestImages } from "../support/real-agent.ts";
import { waitUntil } from "../support/wait.ts";

let cp: TestControlPlane;
let proxy: TcpProxy;
let agent: AgentProcess;
let d: DemoOrganization;
let envId: string;
/** Every environment this file creates, for the clean-up. */
const envIds: string[] = [];
const docker = new Docker();

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  await useTestImages(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  const address = cp.app.server.address() as { port: number };
  // The agent reaches the control plane through a proxy the test can cut.
  proxy = await startTcpProxy(address.port);
  const token = await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = await AgentProcess.create();
  await agent.enroll(`http://127.0.0.1:${proxy.port}`, token.token);
  agent.start();
  const api = publicClient(cp.app, d.api_keys.org_rw);
  // No Git repository: the test reaches nothing outside this machine.
  const project = await api.post("/projects", { name: "E2E shop", server_id: d.server_id, erp_version: "17.0" });
  const env = await api.post("/environments", { project_id: project.body.id, name: "production", cpu_cores: 1, ram_mb: 1024 });
  envId = env.body.id;
  envIds.push(envId);
  await until("agent online", async () => cp.app.gateway.isConnected(d.server_id));
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await proxy?.close();
  await cp?.close();
  // Everything this file's environments left: containers first, then their volumes and networks.
  await removeEnvironmentObjects(envIds);
});

function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => agent.output.slice(-3000) });
}

// These tests make more requests than one key's 20 per minute: calls take turns over a pool
// of keys (an organisation holds at most 50 active ones), each used at most every 40th call.
const KEY_POOL = 40;
const clients: ReturnType<typeof publicClient>[] = [];
let calls = 0;
async function api() {
  if (clients.length < KEY_POOL) {
    const k = await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: "e2e", createdBy: null });
    clients.push(publicClient(cp.app, k.key));
  }
  return clients[calls++ % clients.length]!;
}

async function act(action: string): Promise<{ status: string; error_message: string | null; steps_completed: number; total_steps: number }> {
  const res = await (await api()).post(`/environments/${envId}/${action}`);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  let task = { status: "queued" } as { status: string; error_message: string | null; steps_completed: number; total_steps: number };
  await until(`${action} to finish`, async () => {
    task = (await (await api()).get(`/deployments/${res.body.task_id}`)).body;
    return ["completed", "failed", "cancelled"].includes(task.status);
  }, 120_000);
  return task;
}

async function erpPort(): Promise<number> {
  const { rows } = await cp.database.pool.query(
    `select c.result from agent_commands c join deployments d on d.id = c.deployment_id
     where d.environment_id = $1 and c.result ? 'host_port' and c.result->>'host_port' is not null order by c.completed_at desc limit 1`,
    [envId],
  );
  return Number(rows[0].result.host_port);
}

async function rows(): Promise<{ rows: { note: string }[]; addons_version?: string | null }> {
  const res = await fetch(`http://127.0.0.1:${await erpPort()}/berth/rows`);
  expect(res.status).toBe(200);
  return res.json();
}

async function envStatus(): Promise<string> {
  return (await (await api()).get(`/environments/${envId}`)).body.status;
}

it("deploys every step and the ERP answers on its published port", async () => {
  const task = await act("deploy");
  expect(task).toMatchObject({ status: "completed", steps_completed: 17, total_steps: 17, error_message: null });
  expect(await envStatus()).toBe("running");
  const health = await fetch(`http://127.0.0.1:${await erpPort()}/web/health`);
  expect(await health.json()).toEqual({ status: "pass" });
  const res = await fetch(`http://127.0.0.1:${await erpPort()}/berth/add?note=survivor`);
  expect(res.status).toBeLessThan(400);
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");
}, 180_000);

it("keeps the data through restart, stop/start and redeploy", async () => {
  expect((await act("restart")).status).toBe("completed");
  await until("ERP up after restart", async () => fetch(`http://127.0.0.1:${await erpPort()}/web/health`).then((r) => r.ok, () => false));
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");

  expect((await act("stop")).status).toBe("completed");
  expect(await envStatus()).toBe("stopped");
  expect((await act("start")).status).toBe("completed");
  expect(await envStatus()).toBe("running");
  await until("ERP up after start", async () => fetch(`http://127.0.0.1:${await erpPort()}/web/health`).then((r) => r.ok, () => false));
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");

  expect((await act("actions/redeploy")).status).toBe("completed");
  await until("ERP up after redeploy", async () => fetch(`http://127.0.0.1:${await erpPort()}/web/health`).then((r) => r.ok, () => false));
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");
}, 300_000);

it("a failing deploy (image that does not exist) fails with a readable error", async () => {
  await cp.app.services.images.set({ erp: { "17.0": "127.0.0.1:9/berth-test/missing:17.0" } });
  try {
    const task = await act("deploy");
    expect(task.status).toBe("failed");
    expect(task.error_message).toMatch(/not found locally and could not be pulled/);
    expect(await envStatus()).toBe("error");
  } finally {
    await cp.app.services.images.set({ erp: { "17.0": "berth-test/erp:17.0" } });
  }
}, 180_000);

it("a deploy whose link is cut mid-way finishes and reports every step exactly once", async () => {
  const res = await (await api()).post(`/environments/${envId}/actions/redeploy`);
  expect(res.status).toBe(202);
  const taskId: string = res.body.task_id;
  await until("the deploy to start", async () => (await (await api()).get(`/deployments/${taskId}`)).body.steps_completed >= 1, 60_000);
  proxy.cut();
  await new Promise((r) => setTimeout(r, 3000));
  proxy.restore();
  let task = { status: "running" } as { status: string; steps_completed: number };
  await until("the deploy to finish after the cut", async () => {
    task = (await (await api()).get(`/deployments/${taskId}`)).body;
    return task.status === "completed" || task.status === "failed";
  }, 120_000);
  expect(task).toMatchObject({ status: "completed", steps_completed: 17 });
  const finishedSteps = await cp.database.pool.query<{ step: string; n: number }>(
    "select body->>'step' as step, count(*)::int as n from agent_events where deployment_id = $1 and kind = 'step.finished' group by 1",
    [taskId],
  );
  expect(finishedSteps.rows).toHaveLength(17);
  for (const r of finishedSteps.rows) expect(r.n, r.step).toBe(1);
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");
}, 240_000);

it("a deploy whose repository cannot be cloned fails with the git error", async () => {
  const client = await api();
  const project = await client.post("/projects", {
    name: "Broken repo",
    server_id: d.server_id,
    erp_version: "17.0",
    // Loopback port 1: refused at once, nothing leaves this machine.
    git_repo_url: "https://127.0.0.1:1/missing.git",
  });
  const env = await client.post("/environments", { project_id: project.body.id, name: "staging", ram_mb: 1024 });
  envIds.push(env.body.id);
  const res = await (await api()).post(`/environments/${env.body.id}/deploy`);
  let task = { status: "queued" } as { status: string; error_message: string | null };
  await until("the clone to fail", async () => {
    task = (await (await api()).get(`/deployments/${res.body.task_id}`)).body;
    return task.status === "failed" || task.status === "completed";
  }, 120_000);
  expect(task.status).toBe("failed");
  expect(task.error_message).toMatch(/git clone of https:\/\/127\.0\.0\.1:1\/missing\.git .*failed/);
  const leftovers = await docker.listContainers({ all: true, filters: { label: [`berth.environment_id=${env.body.id}`] } });
  await Promise.all(leftovers.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {})));
}, 180_000);

async function psqlInDb(sqlText: string): Promise<string> {
  const [db] = await docker.listContainers({ filters: { label: [`berth.environment_id=${envId}`, "berth.role=db"] } });
  const exec = await docker.getContainer(db!.Id).exec({ Cmd: ["psql", "-U", "odoo", "-d", "odoo", "-tAc", sqlText], AttachStdout: true, AttachStderr: true });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  return Buffer.concat(chunks).toString("utf8");
}

it("backup, then rows deleted, then restore brings them back", async () => {
  const client = await api();
  const started = await client.post(`/environments/${envId}/backups`, { comment: "before the accident" });
  expect(started.status).toBe(202);
  await until("backup completed", async () => {
    const list = (await (await api()).get(`/environments/${envId}/backups`)).body;
    return list.data.some((b: { id: string; status: string }) => b.id === started.body.backup_id && b.status === "completed");
  }, 120_000);
  const listed = (await (await api()).get(`/environments/${envId}/backups`)).body.data.find((b: { id: string }) => b.id === started.body.backup_id);
  expect(listed).toMatchObject({ comment: "before the accident", backup_type: "manual", status: "completed" });
  expect(listed.size_bytes).toBeGreaterThan(0);
  for (const f of listed.files) expect(f.sha256).toMatch(/^[0-9a-f]{64}$/);

  await psqlInDb("delete from berth_probe");
  expect((await rows()).rows).toHaveLength(0);

  const restore = await (await api()).post(`/environments/${envId}/restore`, { backup_id: started.body.backup_id });
  expect(restore.status).toBe(202);
  let task = { status: "queued" } as { status: string; error_message: string | null };
  await until("restore to finish", async () => {
    task = (await (await api()).get(`/deployments/${restore.body.task_id}`)).body;
    return ["completed", "failed"].includes(task.status);
  }, 120_000);
  expect(task.status, task.error_message ?? "").toBe("completed");
  await until("ERP up after restore", async () => fetch(`http://127.0.0.1:${await erpPort()}/web/health`).then((r) => r.ok, () => false));
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");
}, 300_000);

it("cancel mid-deploy stops at the next step boundary and says so", async () => {
  const res = await (await api()).post(`/environments/${envId}/actions/redeploy`);
  await until("the redeploy to start", async () => (await (await api()).get(`/deployments/${res.body.task_id}`)).body.steps_completed >= 1, 60_000);
  const cancelled = await (await api()).post(`/deployments/${res.body.task_id}/cancel`);
  expect(cancelled.status).toBe(200);
  expect(cancelled.body.status).toBe("cancelled");
  await until("the agent to stop", async () => {
    const { rows: r } = await cp.database.pool.query("select state, error->>'code' as code from agent_commands where deployment_id = $1", [res.body.task_id]);
    return r[0]?.state === "failed" && r[0]?.code === "cancelled";
  }, 60_000);
  const { rows: logs } = await cp.database.pool.query("select message from deployment_logs where deployment_id = $1 and level = 'warning'", [res.body.task_id]);
  expect(logs.map((l: { message: string }) => l.message).join("\n")).toMatch(/Cancelled/);
  const again = await (await api()).post(`/deployments/${res.body.task_id}/cancel`);
  expect(again.status).toBe(409);
  expect(again.body.error).toBe("task_not_cancellable");
  // Bring the environment back for what follows.
  expect((await act("deploy")).status).toBe("completed");
  expect((await rows()).rows.map((r) => r.note)).toContain("survivor");
}, 300_000);

it("destroy keeps the data directory unless delete_data, and removes every container", async () => {
  const dataDir = `${agent.stateDir}/environments/${envId}/data`;
  const { existsSync } = await import("node:fs");
  const refused = await (await api()).delete(`/environments/${envId}`);
  expect(refused.status).toBe(400);
  expect(refused.body.error).toBe("confirm_required");

  const keep = await (await api()).delete(`/environments/${envId}`, { "x-confirm-delete": "true" });
  expect(keep.status).toBe(202);
  await until("destroy to finish", async () => (await (await api()).get(`/deployments/${keep.body.task_id}`)).body.status === "completed", 120_000);
  expect(await docker.listContainers({ all: true, filters: { label: [`berth.environment_id=${envId}`] } })).toHaveLength(0);
  expect(existsSync(dataDir)).toBe(true);
  const env = (await (await api()).get(`/environments/${envId}`)).body;
  expect(env).toMatchObject({ status: "pending", is_active: false, container_id: null, container_name: null });

  // Deployed again, the database starts empty (its volume went), the file store stayed.
  expect((await act("deploy")).status).toBe("completed");
  expect((await rows()).rows.map((r) => r.note)).not.toContain("survivor");

  const all = await (await api()).delete(`/environments/${envId}?delete_data=true`, { "x-confirm-delete": "true" });
  await until("destroy with data to finish", async () => (await (await api()).get(`/deployments/${all.body.task_id}`)).body.status === "completed", 120_000);
  expect(existsSync(dataDir)).toBe(false);
  expect(await docker.listContainers({ all: true, filters: { label: [`berth.environment_id=${envId}`] } })).toHaveLength(0);
}, 300_000);
