// The support console end to end: a portal admin acts on a customer's environment through
// a real agent process and the real Docker engine (restart, logs.tail, diagnostics), with a
// reason, and the organisation's owner reads each command and its outcome in the audit log.
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
let staff: Person;
let owner: Person;
let projectId: string;
let envId: string;
const docker = new Docker();

beforeAll(async () => {
  ({ cp, d, agent, projectId, envId } = await startShop("Support shop"));
  staff = await addPerson(cp.app, "portal_admin", { organizationId: d.organization_id });
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  if (!envId) return;
  await removeEnvironmentObjects([envId]);
});

function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => agent.output.slice(-3000) });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function ownersEntry(id: string): Promise<any> {
  const res = await owner.api.get(`/organizations/${d.organization_id}/audit-log?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data.find((e: { id: string }) => e.id === id);
}

/** Waits until the owner's audit entry has a final result, and returns the entry. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function finished(id: string): Promise<any> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let entry: any;
  await until(`audit entry ${id} to finish`, async () => {
    entry = await ownersEntry(id);
    return !["pending", "running", "requested"].includes(entry?.result.state);
  });
  return entry;
}

async function erpContainer() {
  const [c] = await docker.listContainers({ filters: { label: [`berth.environment_id=${envId}`, "berth.role=erp"] } });
  if (!c) throw new Error("no ERP container");
  return docker.getContainer(c.Id).inspect();
}

it("deploys the environment the console will act on, and shows the live agent", async () => {
  const res = await owner.api.post("/deployments", { project_id: projectId, environment_id: envId, git_branch: "main" });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  let status = "pending";
  await until("the deployment to finish", async () => {
    status = (await owner.api.get(`/deployments/${res.body.id}`)).body.status;
    return isTerminal(status);
  }, 180_000);
  expect(status, JSON.stringify((await owner.api.get(`/deployments/${res.body.id}`)).body.error_message)).toBe("success");

  const server = await staff.api.get(`/support/servers/${d.server_id}`);
  expect(server.status).toBe(200);
  expect(server.body.agent).toMatchObject({ state: "online", agent_version: expect.any(String), docker_version: expect.any(String), connected_at: expect.any(String) });
  expect(server.body.environments).toContainEqual(expect.objectContaining({ id: envId, name: "production", status: "running", project_name: "Support shop" }));
  expect(server.body.recent_commands[0]).toMatchObject({ type: "deploy", state: "succeeded" });
}, 240_000);

it("restarts with a reason: the container really restarts and the owner sees the entry succeed", async () => {
  const before = (await erpContainer()).State.StartedAt;
  const res = await staff.api.post(`/support/servers/${d.server_id}/commands`, { type: "restart", environment_id: envId, reason: "Ticket 812: ERP hangs on login" });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const entry = await finished(res.body.audit_entry_id);
  expect(entry).toMatchObject({
    actor: { id: staff.userId, email: staff.email },
    action: "support.restart",
    target: { type: "environment", id: envId, name: "production" },
    reason: "Ticket 812: ERP hangs on login",
    deployment_id: res.body.deployment_id,
    result: { state: "succeeded", summary: "restart succeeded" },
  });
  const after = await erpContainer();
  expect(after.State.Running).toBe(true);
  expect(after.State.StartedAt).not.toBe(before);
}, 180_000);

it("tails the last 20 log lines of the ERP container; the lines reach the console and the owner", async () => {
  const res = await staff.api.post(`/support/servers/${d.server_id}/commands`, { type: "logs.tail", environment_id: envId, lines: 20, reason: "Ticket 812: looking for the error" });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let cmd: any;
  await until("the logs.tail result", async () => {
    cmd = (await staff.api.get(`/support/commands/${res.body.command_id}`)).body;
    return !["pending", "accepted"].includes(cmd.state);
  });
  expect(cmd, JSON.stringify(cmd)).toMatchObject({ type: "logs.tail", state: "succeeded", params: { environment_id: envId, lines: 20 } });
  const lines = cmd.result.lines as string[];
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.length).toBeLessThanOrEqual(20);
  // What the engine multiplexes is split properly: no frame headers or control bytes in the text.
  const controlBytes = (line: string) => [...line].filter((ch) => ch.charCodeAt(0) < 0x20 && ch !== "\t").length;
  for (const line of lines) expect(controlBytes(line), JSON.stringify(line)).toBe(0);
  // The test image logs in Odoo's format: "<date> <time>,<ms> <pid> <LEVEL> <db> <logger>: <message>".
  expect(lines.some((l) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} \d+ (INFO|WARNING|ERROR|DEBUG) /.test(l)), lines.join("\n")).toBe(true);
  // The same lines as `docker logs --tail 20` (read just after, so a line may have been added since).
  const erp = await erpContainer();
  const raw = await docker.getContainer(erp.Id).logs({ stdout: true, stderr: true, tail: 20, follow: false });
  expect(demux(raw).trimEnd().split("\n")).toContain(lines.at(-1));

  const entry = await finished(res.body.audit_entry_id);
  expect(entry).toMatchObject({ action: "support.logs.tail", result: { state: "succeeded", summary: expect.stringMatching(/^\d+ log lines? of /) } });
  const detail = await owner.api.get(`/organizations/${d.organization_id}/audit-log/${res.body.audit_entry_id}`);
  expect(detail.body.output.lines).toEqual(lines);
}, 120_000);

it("collects diagnostics; the report comes back and the owner sees it succeeded", async () => {
  const res = await staff.api.post(`/support/servers/${d.server_id}/commands`, { type: "diagnostics", reason: "Ticket 812: disk usage check" });
  expect(res.status).toBe(202);
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  let cmd: any;
  await until("the diagnostics result", async () => {
    cmd = (await staff.api.get(`/support/commands/${res.body.command_id}`)).body;
    return !["pending", "accepted"].includes(cmd.state);
  });
  expect(cmd.state, JSON.stringify(cmd)).toBe("succeeded");
  expect(cmd.result).toMatchObject({ agent: { version: expect.any(String) }, docker: { reachable: true, version: expect.any(String) }, journal: expect.any(Object) });
  const entry = await finished(res.body.audit_entry_id);
  expect(entry).toMatchObject({ action: "support.diagnostics", target: { type: "server", id: d.server_id }, result: { state: "succeeded" } });
  expect(entry.result.summary).toMatch(/^Diagnostics collected/);
}, 120_000);

/** stdout and stderr of `docker logs` without a TTY (8-byte frame headers). */
function demux(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buffer.length) {
    const size = buffer.readUInt32BE(at + 4);
    parts.push(buffer.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString("utf8");
}
