// The platform API's deployment lifecycle end to end: a project admin signed in with a
// session drives a real agent process and the real Docker engine through deploy, a failed
// deploy, retry, rollback (the container's configuration comes back), cancel and destroy.
import Docker from "dockerode";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import type { AgentProcess } from "../support/agent-process.ts";
import type { TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { removeEnvironmentObjects, startShop } from "../support/real-agent.ts";
import { waitUntil } from "../support/wait.ts";
import { isTerminal } from "../../apps/control-plane/src/modules/deployments/operations/deployment-state.ts";

let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let admin: Person;
let projectId: string;
let envId: string;
const docker = new Docker();

beforeAll(async () => {
  ({ cp, d, agent, projectId, envId } = await startShop("Lifecycle shop"));
  admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId });
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  await removeEnvironmentObjects([envId]);
});

// Generous: once, on a loaded CI machine, a deployment here took longer than 120 s (cause not found).
function until(what: string, check: () => Promise<boolean>, timeoutMs = 240_000, detail = () => ""): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => `${detail()}${agent.output.slice(-3000)}` });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function settled(id: string): Promise<any> {
  let record = { status: "pending" };
  let progress = "";
  await until(`deployment ${id} to finish`, async () => {
    record = (await admin.api.get(`/deployments/${id}`)).body;
    if (isTerminal(record.status)) return true;
    // Where it stands, for the failure message should it never finish.
    const p = (await admin.api.get(`/deployments/${id}/progress`)).body as { steps?: { id: string; status: string }[] };
    progress = `status ${record.status}; steps ${(p.steps ?? []).map((s) => `${s.id}:${s.status}`).join(", ")}\n`;
    return false;
  }, undefined, () => progress);
  return record;
}

async function erpNanoCpus(): Promise<number | undefined> {
  const [c] = await docker.listContainers({ filters: { label: [`berth.environment_id=${envId}`, "berth.role=erp"] } });
  if (!c) return undefined;
  return (await docker.getContainer(c.Id).inspect()).HostConfig.NanoCpus;
}

const deploy = async () => {
  const res = await admin.api.post("/deployments", { project_id: projectId, environment_id: envId, git_branch: "main" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
};
const setCpus = (n: number) => cp.database.pool.query("update environments set cpu_cores = $2 where id = $1", [envId, n]);

const ids: Record<"first" | "second" | "failed" | "retry", string> = { first: "", second: "", failed: "", retry: "" };

it("deploys: the record ends success with the agent's step logs and full progress", async () => {
  ids.first = await deploy();
  const done = await settled(ids.first);
  expect(done).toMatchObject({ status: "success", version: 1, trigger: "manual", triggered_by: admin.userId, extra_data: { config: { cpu_cores: 1 } } });
  expect(done.image_tag).toBe("berth-test/erp:17.0");
  expect(await erpNanoCpus()).toBe(1e9);
  const logs = (await admin.api.get(`/deployments/${ids.first}/logs`)).body.logs as { step: string; message: string }[];
  expect(logs.length).toBeGreaterThan(5);
  expect(new Set(logs.map((l) => l.step))).toContain("starting_container");
  const progress = (await admin.api.get(`/deployments/${ids.first}/progress`)).body;
  expect(progress.progress_percent).toBe(100);
  expect(progress.steps.every((s: { status: string }) => s.status === "completed")).toBe(true);
}, 300_000);

it("a failed deployment is retried with the same configuration as a new record", async () => {
  await setCpus(2);
  ids.second = await deploy();
  expect((await settled(ids.second)).status).toBe("success");
  expect(await erpNanoCpus()).toBe(2e9);

  await cp.app.services.images.set({ erp: { "17.0": "127.0.0.1:9/berth-test/missing:17.0" } });
  ids.failed = await deploy();
  const failed = await settled(ids.failed);
  await cp.app.services.images.set({ erp: { "17.0": "berth-test/erp:17.0" } });
  expect(failed.status).toBe("failed");
  expect(failed.error_message).toMatch(/could not be pulled/);

  await setCpus(1); // changed after the failure: the retry must not pick it up
  const retry = await admin.api.post(`/deployments/${ids.failed}/retry`);
  expect(retry.status).toBe(200);
  expect(retry.body).toMatchObject({ version: failed.version + 1, extra_data: { retry_of: ids.failed, config: { cpu_cores: 2 } } });
  ids.retry = retry.body.id;
  expect((await settled(ids.retry)).status).toBe("success");
  expect(await erpNanoCpus()).toBe(2e9);
  expect((await admin.api.get(`/deployments/${ids.failed}`)).body.status).toBe("failed");
}, 300_000);

it("rolls back to the first deployment: its configuration returns, the replaced one is marked rolled_back", async () => {
  await setCpus(2); // the environment's current setting; the rollback must use the target's (1)
  const rb = await admin.api.post(`/deployments/${ids.first}/rollback`);
  expect(rb.status, JSON.stringify(rb.body)).toBe(200);
  expect(rb.body).toMatchObject({ trigger: "rollback", rollback_from_id: ids.retry, extra_data: { rollback_to: ids.first, config: { cpu_cores: 1 } } });
  expect((await settled(rb.body.id)).status).toBe("success");
  expect(await erpNanoCpus()).toBe(1e9);
  expect((await admin.api.get(`/deployments/${ids.retry}`)).body.status).toBe("rolled_back");
}, 300_000);

it("cancels a running redeploy: the agent stops and the log says who cancelled", async () => {
  const res = await admin.api.post(`/environments/${envId}/deploy`, { force: true });
  expect(res.status).toBe(201);
  const id = res.body.deployment.id as string;
  await until("the redeploy to start", async () => (await admin.api.get(`/deployments/${id}`)).body.status === "deploying");
  const cancel = await admin.api.post(`/deployments/${id}/cancel`);
  expect(cancel.status).toBe(200);
  expect((await admin.api.get(`/deployments/${id}`)).body.status).toBe("cancelled");
  await until("the agent to stop", async () => {
    const { rows } = await cp.database.pool.query("select state, error->>'code' as code from agent_commands where deployment_id = $1", [id]);
    return rows[0]?.state === "failed" && rows[0]?.code === "cancelled";
  });
  const warnings = (await admin.api.get(`/deployments/${id}/logs?level=warning`)).body.logs;
  expect(warnings).toContainEqual(expect.objectContaining({ message: "Deployment cancelled by user", data: { cancelled_by: admin.userId } }));
}, 300_000);

it("destroys the environment: containers gone, record destroyed, environment pending and inactive", async () => {
  const res = await admin.api.delete(`/deployments/environment/${envId}/destroy?delete_data=true`);
  expect(res.status).toBe(200);
  expect((await settled(res.body.deployment_id)).status).toBe("destroyed");
  const { rows } = await cp.database.pool.query("select status, is_active, container_id, container_name from environments where id = $1", [envId]);
  expect(rows[0]).toEqual({ status: "pending", is_active: false, container_id: null, container_name: null });
  expect(await docker.listContainers({ all: true, filters: { label: [`berth.environment_id=${envId}`] } })).toEqual([]);
}, 300_000);
