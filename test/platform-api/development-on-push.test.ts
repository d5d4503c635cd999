// Development environments made by pushes (issue 34, "Stages"), over real HTTP: the project
// settings development_server_id and development_limit in both APIs (a server of another
// organisation refused with 422), and the signed push hook that, when the setting is on,
// makes a development environment for a branch without one on that server and deploys it,
// once per delivery, stopping (never destroying) the oldest idle one at the limit and
// making none when none is idle.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { addPerson, type Person } from "../support/people.ts";
import { signedPush } from "../support/signed-push.ts";
import { urlOf } from "../support/sse.ts";

let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
  base = urlOf(cp);
});
afterAll(async () => cp?.close());

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

interface Setup {
  demo: DemoOrganization;
  admin: Person;
  secret: string;
  /** A second server of the organisation, for development environments. */
  devServer: string;
}

async function addServer(organizationId: string, name: string): Promise<string> {
  const [row] = await q(
    "insert into servers (organization_id, name, provider, region, hostname, cpu_cores, ram_mb, disk_gb) values ($1, $2, 'hetzner', 'fsn1', $3, 2, 4096, 40) returning id",
    [organizationId, name, `${name}.example.com`],
  );
  return row.id;
}

/** A demo project with a hook secret and a second server; its development setting left as it comes (off). */
async function project(): Promise<Setup> {
  const demo = await createDemoOrganization(cp.database.db, cp.app.services);
  const admin = await addPerson(cp.app, "org_admin", { organizationId: demo.organization_id });
  const res = await admin.api.post(`/projects/${demo.project_id}/git-hook-secret`);
  expect(res.status).toBe(201);
  return { demo, admin, secret: res.body.secret, devServer: await addServer(demo.organization_id, `dev-${randomUUID().slice(0, 8)}`) };
}

const push = (s: Setup, branch: string, delivery: string = randomUUID()) => signedPush(base, s.secret, branch, { delivery });

const environmentsOn = (projectId: string, branch: string) =>
  q("select id, name, stage, server_id, auto_deploy, is_active, status, cpu_cores, ram_mb, disk_gb, workers, variables from environments where project_id = $1 and git_branch = $2", [projectId, branch]);
const operationsOf = (environmentId: string) => q("select id, kind, status, trigger, server_id, extra_data from deployments where environment_id = $1 order by created_at", [environmentId]);

/** The environment's deploy succeeded at `at` and it runs. */
async function deployedAt(environmentId: string, at: string): Promise<void> {
  await q("update deployments set status = 'success', completed_at = $2 where environment_id = $1 and kind = 'deploy'", [environmentId, at]);
  await q("update environments set status = 'running' where id = $1", [environmentId]);
}

describe("the project settings", () => {
  test("off by default with a limit of 3; set in both APIs; a server of another organisation or an out-of-range limit is refused and changes nothing", async () => {
    const s = await project();
    const key = publicClient(cp.app, s.demo.api_keys.org_rw);
    const before = await key.get(`/projects/${s.demo.project_id}`);
    expect(before.body).toMatchObject({ development_server_id: null, development_limit: 3 });

    const stranger = await createDemoOrganization(cp.database.db, cp.app.services);
    const refused = await key.patch(`/projects/${s.demo.project_id}`, { development_server_id: stranger.server_id, name: "Renamed" });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: "development_server_invalid", message: expect.stringContaining("development_server_id") });
    expect((await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: randomUUID() })).status).toBe(422);
    for (const development_limit of [0, 21, 2.5]) expect((await key.patch(`/projects/${s.demo.project_id}`, { development_limit })).status).toBe(400);
    expect((await key.get(`/projects/${s.demo.project_id}`)).body).toMatchObject({ name: "Demo ERP", development_server_id: null, development_limit: 3 });

    const set = await key.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer, development_limit: 5 });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ development_server_id: s.devServer, development_limit: 5 });
    // The platform API (the dashboard's) shows and changes the same settings.
    const list = await s.admin.api.get(`/organizations/${s.demo.organization_id}/projects`);
    expect(list.body.data.find((p: { id: string }) => p.id === s.demo.project_id)).toMatchObject({ development_server_id: s.devServer, development_limit: 5 });
    const off = await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: null, development_limit: 20 });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ development_server_id: null, development_limit: 20 });

    // At creation too.
    const created = await key.post("/projects", { name: "With development", server_id: s.demo.server_id, development_server_id: s.devServer, development_limit: 1 });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ development_server_id: s.devServer, development_limit: 1 });
    const bad = await key.post("/projects", { name: "Bad", server_id: s.demo.server_id, development_server_id: stranger.server_id });
    expect(bad.status).toBe(422);
    expect(await q("select 1 from projects where organization_id = $1 and name = 'Bad'", [s.demo.organization_id])).toEqual([]);
  });
});

describe("a push to a branch without an environment", () => {
  test("with the setting off (the default), it creates nothing", async () => {
    const s = await project();
    const res = await push(s, "feature/off");
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ deployments: [], skipped: [], created_environments: [], stopped: [] });
    expect(await environmentsOn(s.demo.project_id, "feature/off")).toEqual([]);
  });

  test("with it on: a development environment on the chosen server, sized like production without its variables, deploying the push; a redelivery makes no second one", async () => {
    const s = await project();
    await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer });
    await q(`update environments set cpu_cores = 3, ram_mb = 3072, disk_gb = 30, workers = 4, variables = '{"SECRET_TOKEN": {"value_enc": "sealed", "updated_at": "2026-01-01T00:00:00Z"}}' where id = $1`, [
      s.demo.environments.running,
    ]);

    const res = await push(s, "feature/Invoice#12");
    expect(res.status).toBe(202);
    const [env] = await environmentsOn(s.demo.project_id, "feature/Invoice#12");
    expect(env).toMatchObject({ name: "feature-invoice-12", stage: "development", server_id: s.devServer, auto_deploy: true, is_active: true, cpu_cores: 3, ram_mb: 3072, disk_gb: 30, workers: 4, variables: {} });
    expect(res.body.created_environments).toEqual([{ project_id: s.demo.project_id, environment_id: env.id, name: "feature-invoice-12" }]);
    expect(res.body.deployments).toEqual([{ project_id: s.demo.project_id, environment_id: env.id, deployment_id: expect.any(String), reason: "branch", addon: null }]);
    const [deploy] = await operationsOf(env.id);
    expect(deploy).toMatchObject({ id: res.body.deployments[0].deployment_id, kind: "deploy", trigger: "git_push", server_id: s.devServer });
    expect(deploy.extra_data.git_push).toMatchObject({ branch: "feature/Invoice#12", commit: res.commit, created_environment: true });
    expect(await q("select server_id from agent_commands where deployment_id = $1", [deploy.id])).toEqual([{ server_id: s.devServer }]);

    const again = await push(s, "feature/Invoice#12", res.delivery);
    expect(again.status).toBe(200);
    expect(again.body.created_environments).toEqual(res.body.created_environments);
    expect(again.body.deployments).toEqual(res.body.deployments);
    expect(await environmentsOn(s.demo.project_id, "feature/Invoice#12")).toHaveLength(1);
    expect(await operationsOf(env.id)).toHaveLength(1);

    // A later push to the branch deploys that environment (busy here), and makes none.
    const later = await push(s, "feature/Invoice#12");
    expect(later.body.created_environments).toEqual([]);
    expect(later.body.skipped).toEqual([{ project_id: s.demo.project_id, environment_id: env.id, reason: "deployment_in_progress", message: expect.any(String) }]);
    expect(await environmentsOn(s.demo.project_id, "feature/Invoice#12")).toHaveLength(1);
  });

  test("a branch that has an environment (of any stage, deploying on push or not) gets no new one", async () => {
    const s = await project();
    await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer });
    const res = await push(s, "staging"); // the demo's staging environment follows it, without auto-deploy
    expect(res.body).toMatchObject({ created_environments: [], deployments: [] });
    expect(await environmentsOn(s.demo.project_id, "staging")).toHaveLength(1);
    expect(await q("select count(*)::int as n from environments where project_id = $1", [s.demo.project_id])).toEqual([{ n: 2 }]);
  });

  test("at the limit, the least recently deployed idle development environment is stopped, never destroyed; with none idle, none is made and the push says why", async () => {
    const s = await project();
    await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer, development_limit: 2 });
    const [a] = (await push(s, "dev-a")).body.created_environments;
    const [b] = (await push(s, "dev-b")).body.created_environments;
    // b was deployed longer ago than a: b is the one to stop.
    await deployedAt(a.environment_id, "2026-12-01T11:00:00Z");
    await deployedAt(b.environment_id, "2026-12-01T10:00:00Z");

    const c = await push(s, "dev-c");
    expect(c.status).toBe(202);
    expect(c.body.created_environments).toEqual([{ project_id: s.demo.project_id, environment_id: expect.any(String), name: "dev-c" }]);
    expect(c.body.stopped).toEqual([{ project_id: s.demo.project_id, environment_id: b.environment_id, deployment_id: expect.any(String), reason: "development_limit" }]);
    const bOps = await operationsOf(b.environment_id);
    expect(bOps.map((o) => `${o.kind}:${o.trigger}`)).toEqual(["deploy:git_push", "stop:development_limit"]);
    expect(bOps[1].id).toBe(c.body.stopped[0].deployment_id);
    expect((await environmentsOn(s.demo.project_id, "dev-b"))[0]).toMatchObject({ is_active: true, status: "running" });
    expect((await operationsOf(a.environment_id)).map((o) => o.kind)).toEqual(["deploy"]);
    // The production environment is no development environment: never counted, never stopped.
    expect(await operationsOf(s.demo.environments.running)).toEqual([]);

    // A redelivery answers the same stop and environment, and starts nothing more.
    const again = await push(s, "dev-c", c.delivery);
    expect(again.status).toBe(200);
    expect(again.body.stopped).toEqual(c.body.stopped);
    expect(again.body.created_environments).toEqual(c.body.created_environments);
    expect(await operationsOf(b.environment_id)).toHaveLength(2);

    // a runs and is busy (a push deploys it), c deploys, b is stopping: none idle.
    expect((await push(s, "dev-a")).body.deployments).toHaveLength(1);
    const d = await push(s, "dev-d");
    expect(d.status).toBe(202);
    expect(d.body).toMatchObject({ created_environments: [], stopped: [], deployments: [] });
    expect(d.body.skipped).toEqual([{ project_id: s.demo.project_id, environment_id: null, reason: "development_limit", message: expect.stringContaining("limit of 2") }]);
    expect(await environmentsOn(s.demo.project_id, "dev-d")).toEqual([]);
    expect(await q("select count(*)::int as n from deployments where project_id = $1 and kind = 'destroy'", [s.demo.project_id])).toEqual([{ n: 0 }]);
  });

  test("pushes of several new branches at once stay within the limit; pushes of one new branch at once make one environment", async () => {
    const s = await project();
    await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer, development_limit: 2 });
    const all = await Promise.all(["b1", "b2", "b3", "b4", "b5"].map((b) => push(s, `many/${b}`)));
    expect(all.map((r) => r.status)).toEqual([202, 202, 202, 202, 202]);
    expect(all.flatMap((r) => r.body.created_environments)).toHaveLength(2);
    expect(all.flatMap((r) => r.body.skipped).map((k) => k.reason)).toEqual(["development_limit", "development_limit", "development_limit"]);
    expect(await q("select count(*)::int as n from environments where project_id = $1 and stage = 'development'", [s.demo.project_id])).toEqual([{ n: 2 }]);

    const t = await project();
    await t.admin.api.patch(`/projects/${t.demo.project_id}`, { development_server_id: t.devServer });
    const same = await Promise.all([1, 2, 3].map(() => push(t, "feature/same")));
    expect(same.flatMap((r) => r.body.created_environments)).toHaveLength(1);
    expect(await environmentsOn(t.demo.project_id, "feature/same")).toHaveLength(1);
  });

  test("a development server deleted since it was chosen: no environment, and the push says why", async () => {
    const s = await project();
    await s.admin.api.patch(`/projects/${s.demo.project_id}`, { development_server_id: s.devServer });
    await q("update servers set deleted_at = now() where id = $1", [s.devServer]);
    const res = await push(s, "feature/orphan");
    expect(res.status).toBe(202);
    expect(res.body.skipped).toEqual([{ project_id: s.demo.project_id, environment_id: null, reason: "environment_not_created", message: expect.stringContaining("was deleted") }]);
    expect(await environmentsOn(s.demo.project_id, "feature/orphan")).toEqual([]);
  });
});
