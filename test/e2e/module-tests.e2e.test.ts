// Development builds and module tests end to end (issue 34): a real control plane, the real
// agent process, Docker and the strict ERP stand-in (test/images/erp/tests.c prints what
// Odoo prints for passed, failed and errored tests). A development environment's deploy
// installs the repository's module with demo data, runs its tests in the one-off container
// that installs it and serves anyway; the result (counts, names, Odoo's traceback lines) is
// on the deployment in the public API and in the deployment.completed webhook. A staging
// environment set to require passing tests refuses the same commit and keeps serving its
// previous release, its database as it was.
import { execFile } from "node:child_process";
import { createServer, type Server } from "node:http";
import { mkdtemp, rm, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import type { AgentProcess } from "../support/agent-process.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { removeEnvironmentObjects, startEnrolledAgent, useTestImages } from "../support/real-agent.ts";
import { EXPECTED_TESTS, writeTestedModule } from "../support/tested-module.ts";
import { waitUntil } from "../support/wait.ts";
import { sharedGitHttpsServer } from "../../apps/agent/src/executor/deploy/git-https-server.test-helpers.ts";

const exec = promisify(execFile);
const docker = new Docker();
let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let repoDir: string;
let devId: string;
let stagingId: string;
let api: ReturnType<typeof publicClient>;
const hooks: { type: string; data: { deployment: Record<string, unknown> } }[] = [];
let receiver: Server;
/** Staging's first release (base alone), deployed while the development build runs: the second test refuses a commit on top of it. */
let stagingFirst: Promise<string>;

async function git(...args: string[]): Promise<string> {
  const { stdout } = await exec("git", ["-C", repoDir, "-c", "user.name=Test", "-c", "user.email=test@example.test", ...args]);
  return stdout.trim();
}

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hooks.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.end("ok");
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, outboundAllow: ["127.0.0.1"], jobs: { retryDelaySeconds: 0, pollingIntervalSeconds: 0.5 } });
  await useTestImages(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);

  repoDir = await mkdtemp(path.join(os.tmpdir(), "berth-module-tests-"));
  await exec("git", ["init", "-q", "-b", "main", repoDir]);
  await writeTestedModule(repoDir);
  await git("add", ".");
  await git("commit", "-q", "-m", "A module with tests");
  const served = path.join(await mkdtemp(path.join(os.tmpdir(), "berth-module-tests-served-")), "shop.git");
  await symlink(path.join(repoDir, ".git"), served);

  const scope = { organizationId: d.organization_id, projectId: null };
  const project = await cp.app.services.projects.create(scope, { name: "Tested shop", server_id: d.server_id, erp_version: "17.0" });
  await cp.database.pool.query("update projects set git_repo_url = $2 where id = $1", [project.id, (await sharedGitHttpsServer()).url(served)]);
  const create = (name: string, stage: "staging" | "development") =>
    cp.app.services.environments.create(scope, { project_id: project.id, name, stage, git_branch: "main", cpu_cores: 1, ram_mb: 1024 });
  devId = (await create("feature", "development")).id;
  stagingId = (await create("staging", "staging")).id;
  api = publicClient(cp.app, d.api_keys.org_rw);
  const port = (receiver.address() as { port: number }).port;
  expect((await api.post("/webhooks", { url: `http://127.0.0.1:${port}/hook`, events: ["deployment.completed"] })).status).toBe(201);

  agent = await startEnrolledAgent(cp, d.organization_id, d.server_id);
  await until("agent online", async () => cp.app.gateway.isConnected(d.server_id));
  const patched = await api.patch(`/environments/${stagingId}`, { require_passing_tests: true });
  expect(patched.status, JSON.stringify(patched.body)).toBe(200);
  expect(patched.body.require_passing_tests).toBe(true);
  stagingFirst = deploy(stagingId);
  stagingFirst.catch(() => undefined);
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  await new Promise((r) => receiver?.close(r));
  await removeEnvironmentObjects([devId, stagingId].filter(Boolean));
  if (repoDir) await rm(repoDir, { recursive: true, force: true });
});

function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => agent.output.slice(-3000) });
}

/** Starts a redeploy through the public API and waits for its end (read from the database: the API's rate limit stays for the assertions). */
async function deploy(envId: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post(`/environments/${envId}/actions/redeploy`, body);
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const id = res.body.task_id as string;
  await until(
    "the deployment to end",
    async () => {
      const { rows } = await cp.database.pool.query<{ status: string }>("select status from deployments where id = $1", [id]);
      return ["success", "failed", "cancelled"].includes(rows[0]?.status ?? "");
    },
    150_000,
  );
  return id;
}

/** What the environment's ERP answers now: its container, health and module table (the stand-in's /berth/modules). */
async function erp(envId: string) {
  const [c] = await docker.listContainers({ filters: { label: [`berth.environment_id=${envId}`, "berth.role=erp"] } });
  if (!c) throw new Error("no ERP container");
  const port = c.Ports.find((p) => p.PrivatePort === 8069)!.PublicPort;
  const health = (await (await fetch(`http://127.0.0.1:${port}/web/health`)).json()) as { status: string };
  const modules = (await (await fetch(`http://127.0.0.1:${port}/berth/modules`)).json()) as { name: string; state: string; demo: boolean }[];
  return { containerId: c.Id, health: health.status, module: modules.find((m) => m.name === "shop_tests") ?? null, base: modules.find((m) => m.name === "base")! };
}

it("a development build installs the module with demo data, runs its tests, serves despite the failures and reports them", async () => {
  const id = await deploy(devId);
  const task = (await api.get(`/deployments/${id}`)).body;
  expect(task.status, `${task.error_message}\n${agent.output.slice(-3000)}`).toBe("completed");
  expect(task.tests).toEqual(EXPECTED_TESTS);
  expect(task.modules).toEqual([expect.objectContaining({ name: "shop_tests", action: "installed" })]);

  const served = await erp(devId);
  expect(served.health).toBe("pass");
  expect(served.module).toEqual(expect.objectContaining({ state: "installed", demo: true }));
  expect(served.base.demo).toBe(true);

  await until("the deployment.completed webhook", async () => hooks.some((h) => h.data.deployment.id === id));
  const hook = hooks.find((h) => h.data.deployment.id === id)!;
  expect(hook.type).toBe("deployment.completed");
  expect(hook.data.deployment.tests).toEqual(EXPECTED_TESTS);
}, 200_000);

it("a staging environment that requires passing tests refuses the commit and keeps its previous release", async () => {
  // Staging installs no module on its own: the first release serves base alone (no tests to run).
  const first = await stagingFirst;
  expect((await api.get(`/deployments/${first}`)).body).toMatchObject({ status: "completed", tests: null });
  const before = await erp(stagingId);
  expect(before.module?.state ?? "uninstalled").not.toBe("installed");
  expect(before.base.demo).toBe(false);

  const refused = await deploy(stagingId, { modules: { upgrade: ["shop_tests"] } });
  const task = (await api.get(`/deployments/${refused}`)).body;
  expect(task.status).toBe("failed");
  expect(task.error_message).toMatch(/tests did not pass: 3 test\(s\): 1 failed, 1 error\(s\) \(TestOrders\.test_errors, TestOrders\.test_fails\).*rolled back to/s);
  expect(task.tests).toEqual(EXPECTED_TESTS);

  // The previous release serves, on the database as it was before the refused deploy.
  const after = await erp(stagingId);
  expect(after.containerId).toBe(before.containerId);
  expect(after.health).toBe("pass");
  expect(after.module?.state ?? "uninstalled").not.toBe("installed");
}, 300_000);
