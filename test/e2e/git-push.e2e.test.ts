// End to end: a signed GitHub-style push to the inbound hook starts a git_push deployment
// that the real agent runs with Docker, checking out exactly the pushed commit of a local
// Git repository (served over HTTPS on 127.0.0.1, so nothing outside this machine is reached);
// with the project's development setting on, a push to a new branch makes a development
// environment the agent deploys, its module's tests run and their failures reported with their
// tracebacks, and at the limit the agent stops (never destroys) the idle one.
import { execFile } from "node:child_process";
import { createHmac, randomUUID } from "node:crypto";
import { mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import Docker from "dockerode";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "../support/agent-process.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson } from "../support/people.ts";
import { removeEnvironmentObjects, useTestImages } from "../support/real-agent.ts";
import { EXPECTED_TESTS, writeTestedModule } from "../support/tested-module.ts";
import { waitUntil } from "../support/wait.ts";
import { sharedGitHttpsServer } from "../../apps/agent/src/executor/deploy/git-https-server.test-helpers.ts";

const exec = promisify(execFile);
let cp: TestControlPlane;
let agent: AgentProcess;
let d: DemoOrganization;
let repoDir: string;
let repoUrl: string;
let envId: string;
/** Development environments the pushes made, removed at the end. */
const made: string[] = [];
let base: string;
const docker = new Docker();

async function git(...args: string[]): Promise<string> {
  const { stdout } = await exec("git", ["-C", repoDir, "-c", "user.name=Test", "-c", "user.email=test@example.test", ...args]);
  return stdout.trim();
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  await useTestImages(cp);
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  base = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;

  repoDir = await mkdtemp(path.join(os.tmpdir(), "berth-git-push-"));
  await exec("git", ["init", "-q", "-b", "main", repoDir]);
  await writeFile(path.join(repoDir, "README.md"), "first\n");
  await git("add", ".");
  await git("commit", "-q", "-m", "First commit");

  const scope = { organizationId: d.organization_id, projectId: null };
  const project = await cp.app.services.projects.create(scope, { name: "Pushed shop", server_id: d.server_id, erp_version: "17.0" });
  // Served over HTTPS with a test CA the agent process trusts (GIT_SSL_CAINFO, inherited): an agent's git clones https and ssh only.
  const served = path.join(await mkdtemp(path.join(os.tmpdir(), "berth-git-push-served-")), "shop.git");
  await symlink(path.join(repoDir, ".git"), served);
  repoUrl = (await sharedGitHttpsServer()).url(served);
  await cp.database.pool.query("update projects set git_repo_url = $2 where id = $1", [project.id, repoUrl]);
  const env = await cp.app.services.environments.create(scope, { project_id: project.id, name: "production", git_branch: "main", auto_deploy: true, cpu_cores: 1, ram_mb: 1024 });
  envId = env.id;
  d = { ...d, project_id: project.id };

  const token = await cp.app.services.enrollment.newToken(d.organization_id, d.server_id, null);
  agent = await AgentProcess.create();
  await agent.enroll(base, token.token);
  agent.start();
  await until("agent online", async () => cp.app.gateway.isConnected(d.server_id));
}, 90_000);

afterAll(async () => {
  await agent?.cleanup();
  await cp?.close();
  if (envId) await removeEnvironmentObjects([envId, ...made]);
  if (repoDir) await rm(repoDir, { recursive: true, force: true });
});

function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  return waitUntil(what, check, { timeoutMs, intervalMs: 250, detail: () => agent.output.slice(-3000) });
}

it("a signed push deploys the pushed commit with the real agent", async () => {
  const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  const secret = (await admin.api.post(`/projects/${d.project_id}/git-hook-secret`)).body.secret as string;

  // Two commits; the push names the first as its head, so the deployment must check out that one, not the branch tip.
  const pushed = await git("rev-parse", "HEAD");
  await writeFile(path.join(repoDir, "README.md"), "second\n");
  await git("commit", "-q", "-am", "Second commit");

  const body = JSON.stringify({
    ref: "refs/heads/main",
    after: pushed,
    repository: { full_name: "local/shop", clone_url: repoUrl, ssh_url: repoUrl },
    head_commit: { id: pushed, message: "First commit" },
    commits: [{ id: pushed, message: "First commit" }],
  });
  const res = await fetch(`${base}/api/v1/webhooks/github`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": randomUUID(),
      "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`,
    },
    body,
  });
  const result = (await res.json()) as { deployments: { environment_id: string; deployment_id: string }[] };
  expect(res.status, JSON.stringify(result)).toBe(202);
  expect(result.deployments).toEqual([expect.objectContaining({ environment_id: envId })]);
  const taskId = result.deployments[0]!.deployment_id;

  const { key } = await cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "read_only", name: "e2e", createdBy: null });
  const api = publicClient(cp.app, key);
  let task = { status: "queued" } as { status: string; error_message: string | null };
  await until("the git_push deployment to finish", async () => {
    task = (await api.get(`/deployments/${taskId}`)).body;
    return ["completed", "failed", "cancelled"].includes(task.status);
  }, 180_000);
  expect(task.status, `${task.error_message}\n${agent.output.slice(-3000)}`).toBe("completed");

  const { rows } = await cp.database.pool.query("select trigger, triggered_by, git_commit, git_message from deployments where id = $1", [taskId]);
  expect(rows[0]).toEqual({ trigger: "git_push", triggered_by: null, git_commit: pushed, git_message: "First commit" });
  const logs = await cp.database.pool.query("select message from deployment_logs where deployment_id = $1 and step = 'cloning_repo'", [taskId]);
  expect(logs.rows.map((r: { message: string }) => r.message)).toContain(`Checked out commit ${pushed}`);
  expect((await api.get(`/environments/${envId}`)).body.status).toBe("running");
  const containers = await docker.listContainers({ filters: { label: [`berth.environment_id=${envId}`] } });
  expect(containers.length).toBeGreaterThan(0);
}, 240_000);

/** A signed push of `branch` at its tip, as GitHub sends it. */
async function pushBranch(secret: string, branch: string) {
  const commit = await git("rev-parse", branch);
  const body = JSON.stringify({ ref: `refs/heads/${branch}`, after: commit, repository: { full_name: "local/shop", clone_url: repoUrl, ssh_url: repoUrl }, head_commit: { id: commit, message: "Work" }, commits: [] });
  const res = await fetch(`${base}/api/v1/webhooks/github`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-github-event": "push", "x-github-delivery": randomUUID(), "x-hub-signature-256": `sha256=${createHmac("sha256", secret).update(body).digest("hex")}` },
    body,
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { created_environments: { environment_id: string; name: string }[]; deployments: { environment_id: string; deployment_id: string }[]; stopped: { environment_id: string; deployment_id: string }[] };
}

it("a push to a new branch makes a development environment the agent deploys; at the limit the idle one is stopped, its containers kept", async () => {
  const admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
  const secret = (await admin.api.post(`/projects/${d.project_id}/git-hook-secret`)).body.secret as string;
  expect((await admin.api.patch(`/projects/${d.project_id}`, { development_server_id: d.server_id, development_limit: 1 })).status).toBe(200);
  const statusOf = async (id: string) => (await cp.database.pool.query("select status, kind from deployments where id = $1", [id])).rows[0]?.status as string;
  const envOf = async (id: string) => (await cp.database.pool.query("select name, stage, status, is_active from environments where id = $1", [id])).rows[0];
  const finished = (id: string, what: string) => until(what, async () => ["success", "failed", "cancelled"].includes(await statusOf(id)), 180_000);

  // The branch adds a module whose tests fail: the development build runs them and serves anyway.
  await git("checkout", "-q", "-b", "feature/one");
  await writeFile(path.join(repoDir, "README.md"), "one\n");
  await writeTestedModule(repoDir);
  await git("add", ".");
  await git("commit", "-q", "-m", "One");
  const one = await pushBranch(secret, "feature/one");
  expect(one.created_environments).toEqual([expect.objectContaining({ name: "feature-one" })]);
  const oneId = one.created_environments[0]!.environment_id;
  made.push(oneId);
  const oneDeploy = one.deployments.find((x) => x.environment_id === oneId)!.deployment_id;
  await finished(oneDeploy, "feature-one's deploy");
  expect(await statusOf(oneDeploy), agent.output.slice(-3000)).toBe("success");
  expect(await envOf(oneId)).toMatchObject({ stage: "development", status: "running", is_active: true });
  const built = (await publicClient(cp.app, d.api_keys.org_rw).get(`/deployments/${oneDeploy}`)).body;
  expect(built.tests).toEqual(EXPECTED_TESTS);

  // The limit is 1: a second new branch stops feature-one (idle) for it.
  await git("checkout", "-q", "-b", "feature/two");
  await writeFile(path.join(repoDir, "README.md"), "two\n");
  await git("commit", "-q", "-am", "Two");
  const two = await pushBranch(secret, "feature/two");
  expect(two.stopped).toEqual([expect.objectContaining({ environment_id: oneId })]);
  const twoId = two.created_environments[0]!.environment_id;
  made.push(twoId);
  await finished(two.stopped[0]!.deployment_id, "feature-one's stop");
  expect(await statusOf(two.stopped[0]!.deployment_id)).toBe("success");
  expect(await envOf(oneId)).toMatchObject({ status: "stopped", is_active: true });
  // Stopped, not destroyed: its containers are still there.
  expect((await docker.listContainers({ all: true, filters: { label: [`berth.environment_id=${oneId}`] } })).length).toBeGreaterThan(0);
  await finished(two.deployments.find((x) => x.environment_id === twoId)!.deployment_id, "feature-two's deploy");
  expect(await envOf(twoId)).toMatchObject({ status: "running" });
}, 420_000);
