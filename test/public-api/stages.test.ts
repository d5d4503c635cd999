// Environment stages through both APIs, as a user meets them: the default stage of a new
// environment, one production per project (also when creates race), staging and development
// exchanged by PATCH while production is refused there, and the promotion that says what the
// previous production becomes, in one transaction, in the audit log.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

type Api = Awaited<ReturnType<typeof freshOrganization>>["rw"];

/** A new project of the demo organisation's server, with no environment. */
async function newProject(rw: Api, serverId: string): Promise<string> {
  const res = await rw.post("/projects", { name: `p-${randomUUID().slice(0, 8)}`, server_id: serverId });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

async function stages(projectId: string): Promise<Record<string, string>> {
  const { rows } = await cp.database.pool.query<{ name: string; stage: string }>("select name, stage from environments where project_id = $1", [projectId]);
  return Object.fromEntries(rows.map((r) => [r.name, r.stage]));
}

it("a new environment is production when the project has none, else development, unless it names its stage", async () => {
  const { d, rw, ro } = await freshOrganization(cp);
  const project = await newProject(rw, d.server_id);
  const first = await rw.post("/environments", { project_id: project, name: "main" });
  expect(first).toMatchObject({ status: 201, body: { stage: "production" } });
  expect((await rw.post("/environments", { project_id: project, name: "feature" })).body.stage).toBe("development");
  expect((await rw.post("/environments", { project_id: project, name: "qa", stage: "staging" })).body.stage).toBe("staging");

  // Every view shows it: one environment, the project's list, the dashboard's overview.
  expect((await ro.get(`/environments/${first.body.id}`)).body.stage).toBe("production");
  const listed = (await ro.get(`/projects/${project}/environments`)).body.data as { name: string; stage: string }[];
  expect(Object.fromEntries(listed.map((e) => [e.name, e.stage]))).toEqual({ main: "production", feature: "development", qa: "staging" });
  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const overview = (await owner.api.get(`/organizations/${d.organization_id}/projects`)).body.data.find((p: { id: string }) => p.id === project);
  expect(Object.fromEntries(overview.environments.map((e: { name: string; stage: string }) => [e.name, e.stage]))).toEqual({ main: "production", feature: "development", qa: "staging" });
});

it("refuses a second production with 409 production_exists naming the first; nothing is created", async () => {
  const { d, rw } = await freshOrganization(cp);
  const refused = await rw.post("/environments", { project_id: d.project_id, name: "prod-2", stage: "production" });
  expect(refused).toMatchObject({ status: 409, body: { error: "production_exists" } });
  expect(refused.body.message).toContain(`"production" (${d.environments.running})`);
  expect(await stages(d.project_id)).toEqual({ production: "production", staging: "staging" });

  // Through the dashboard's route too.
  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const viaPlatform = await owner.api.post(`/projects/${d.project_id}/environments`, { name: "prod-3", stage: "production" });
  expect(viaPlatform).toMatchObject({ status: 409, body: { error: "production_exists" } });
  const made = await owner.api.post(`/projects/${d.project_id}/environments`, { name: "qa", stage: "staging" });
  expect(made).toMatchObject({ status: 201, body: { stage: "staging" } });
});

it("of creates racing for production, exactly one wins: named or by default", async () => {
  const { d, rw } = await freshOrganization(cp);
  const named = await newProject(rw, d.server_id);
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => rw.post("/environments", { project_id: named, name: `p${i}`, stage: "production" })));
  expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
  expect(answers.filter((a) => a.status === 409).every((a) => a.body.error === "production_exists")).toBe(true);
  expect(Object.values(await stages(named))).toEqual(["production"]);

  const defaulted = await newProject(rw, d.server_id);
  const made = await Promise.all(Array.from({ length: 6 }, (_, i) => rw.post("/environments", { project_id: defaulted, name: `e${i}` })));
  expect(made.every((a) => a.status === 201)).toBe(true);
  expect(Object.values(await stages(defaulted)).sort()).toEqual(["development", "development", "development", "development", "development", "production"]);
});

it("PATCH moves staging and development both ways (audited); production is refused there and a refusal changes nothing", async () => {
  const { d, rw } = await freshOrganization(cp);
  const staging = d.environments.stopped;
  expect((await rw.patch(`/environments/${staging}`, { stage: "development" })).body.stage).toBe("development");
  expect((await rw.patch(`/environments/${staging}`, { stage: "staging" })).body.stage).toBe("staging");

  const toProduction = await rw.patch(`/environments/${staging}`, { stage: "production", domain: "qa.example.test" });
  expect(toProduction).toMatchObject({ status: 409, body: { error: "stage_change_refused" } });
  expect(toProduction.body.message).toContain("promote");
  const fromProduction = await rw.patch(`/environments/${d.environments.running}`, { stage: "staging" });
  expect(fromProduction).toMatchObject({ status: 409, body: { error: "stage_change_refused" } });
  expect(await stages(d.project_id)).toEqual({ production: "production", staging: "staging" });
  expect((await rw.get(`/environments/${staging}`)).body.domain).toBeNull();
  const invalid = await rw.patch(`/environments/${staging}`, { stage: "prod" });
  expect(invalid).toMatchObject({ status: 400, body: { error: "validation_error" } });
  expect(invalid.body.details).toContainEqual(expect.objectContaining({ path: "body/stage" }));

  // A project admin through the dashboard's PATCH; a project member may not.
  const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  const path = `/projects/${d.project_id}/environments/${staging}`;
  expect(await member.api.patch(path, { stage: "development" })).toMatchObject({ status: 403 });
  expect(await admin.api.patch(path, { stage: "development" })).toMatchObject({ status: 200, body: { stage: "development" } });
  expect(await admin.api.patch(`/projects/${d.project_id}/environments/${d.environments.running}`, { stage: "development" })).toMatchObject({
    status: 409,
    body: { error: "stage_change_refused" },
  });

  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const log = (await owner.api.get(`/organizations/${d.organization_id}/audit-log`)).body.data as { action: string; actor: { id: string } | null; target: { id: string }; result: { summary: string } }[];
  const entries = log.filter((e) => e.action === "environment.stage").reverse();
  expect(entries.map((e) => e.result.summary)).toEqual([
    expect.stringMatching(/^Stage of staging changed from staging to development \(by API key [0-9a-f-]{36}\)$/),
    expect.stringMatching(/^Stage of staging changed from development to staging \(by API key/),
    "Stage of staging changed from staging to development",
  ]);
  expect(entries[2]).toMatchObject({ actor: { id: admin.userId }, target: { id: staging } });
});

it("promote: the previous production takes previous_stage, in one audited step; without it, 400 and nothing changes", async () => {
  const { d, rw } = await freshOrganization(cp);
  const staging = d.environments.stopped;
  const missing = await rw.post(`/environments/${staging}/promote`);
  expect(missing).toMatchObject({ status: 400, body: { error: "previous_stage_required" } });
  expect(missing.body.message).toContain('"production"');
  expect((await rw.post(`/environments/${staging}/promote`, { previous_stage: "production" })).body.error).toBe("validation_error");
  expect(await stages(d.project_id)).toEqual({ production: "production", staging: "staging" });

  const promoted = await rw.post(`/environments/${staging}/promote`, { previous_stage: "development" });
  expect(promoted).toMatchObject({
    status: 200,
    body: { environment: { id: staging, stage: "production" }, previous: { id: d.environments.running, name: "production", stage: "development" } },
  });
  expect(await stages(d.project_id)).toEqual({ production: "development", staging: "production" });
  // Promoting the production again changes nothing.
  expect(await rw.post(`/environments/${staging}/promote`, {})).toMatchObject({ status: 200, body: { previous: null } });

  // Back, as a project admin on the dashboard's route; a member may not.
  const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  expect(await member.api.post(`/environments/${d.environments.running}/promote`, { previous_stage: "staging" })).toMatchObject({ status: 403 });
  expect(await admin.api.post(`/environments/${d.environments.running}/promote`, { previous_stage: "staging" })).toMatchObject({
    status: 200,
    body: { environment: { stage: "production" }, previous: { id: staging, stage: "staging" } },
  });
  expect(await stages(d.project_id)).toEqual({ production: "production", staging: "staging" });

  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const log = (await owner.api.get(`/organizations/${d.organization_id}/audit-log`)).body.data as { action: string; actor: { id: string } | null; target: { id: string }; result: { state: string; summary: string } }[];
  expect(log.filter((e) => e.action === "environment.promote")).toEqual([
    expect.objectContaining({ actor: expect.objectContaining({ id: admin.userId }), target: expect.objectContaining({ id: d.environments.running }), result: { state: "succeeded", summary: "production promoted to production; staging became staging" } }),
    expect.objectContaining({ actor: null, target: expect.objectContaining({ id: staging }), result: expect.objectContaining({ summary: expect.stringMatching(/^staging promoted to production; production became development \(by API key/) }) }),
  ]);
});

it("promotions racing in one project leave exactly one production, each previous one where its promotion put it", async () => {
  const { d, rw } = await freshOrganization(cp);
  const others = [];
  for (let i = 0; i < 4; i++) others.push((await rw.post("/environments", { project_id: d.project_id, name: `dev${i}` })).body.id as string);
  const answers = await Promise.all(others.map((id) => rw.post(`/environments/${id}/promote`, { previous_stage: "staging" })));
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  const after = await stages(d.project_id);
  expect(Object.values(after).filter((s) => s === "production")).toHaveLength(1);
  // Each promotion saw the one before it: the chain of previous productions is every environment but the last.
  const previous = answers.map((a) => a.body.previous.id as string).sort();
  const last = answers.find((a) => !previous.includes(a.body.environment.id))!.body.environment.id;
  expect(after[`dev${others.indexOf(last)}`]).toBe("production");
  expect(previous).toEqual([d.environments.running, ...others.filter((id) => id !== last)].sort());
});

it("a destroyed production still holds the stage (a deploy brings it back): a new production is refused, a promotion moves it", async () => {
  const { d, rw } = await freshOrganization(cp);
  await cp.database.pool.query("update environments set is_active = false where id = $1", [d.environments.running]);
  const refused = await rw.post("/environments", { project_id: d.project_id, name: "production-2", stage: "production" });
  expect(refused).toMatchObject({ status: 409, body: { error: "production_exists" } });
  expect(refused.body.message).toContain(`${d.environments.running}, destroyed`);
  expect((await rw.post(`/environments/${d.environments.running}/promote`, {})).body.error).toBe("environment_inactive");

  const promoted = await rw.post(`/environments/${d.environments.stopped}/promote`, { previous_stage: "staging" });
  expect(promoted).toMatchObject({ status: 200, body: { previous: { id: d.environments.running, stage: "staging" } } });
  expect(await stages(d.project_id)).toEqual({ production: "staging", staging: "production" });
});

it("an environment can run on another server of the organisation than its project's (staging apart from production); another organisation's server is refused and nothing is made", async () => {
  const { d, rw } = await freshOrganization(cp);
  const project = await newProject(rw, d.server_id);
  const { rows } = await cp.database.pool.query<{ id: string }>(
    "insert into servers (organization_id, name, provider, region, hostname, cpu_cores, ram_mb, disk_gb) values ($1, $2, 'hetzner', 'fsn1', 'staging.example.com', 2, 4096, 40) returning id",
    [d.organization_id, `staging-${randomUUID().slice(0, 8)}`],
  );
  const production = await rw.post("/environments", { project_id: project, name: "main" });
  expect(production.body.server_id).toBe(d.server_id);
  const staging = await rw.post("/environments", { project_id: project, name: "qa", stage: "staging", server_id: rows[0]!.id });
  expect(staging.status, JSON.stringify(staging.body)).toBe(201);
  expect(staging.body).toMatchObject({ stage: "staging", server_id: rows[0]!.id });

  const stranger = await freshOrganization(cp);
  const refused = await rw.post("/environments", { project_id: project, name: "elsewhere", server_id: stranger.d.server_id });
  expect(refused).toMatchObject({ status: 400, body: { error: "server_not_found" } });
  // Through the platform API too.
  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const viaPlatform = await owner.api.post(`/projects/${project}/environments`, { name: "elsewhere", server_id: stranger.d.server_id });
  expect(viaPlatform).toMatchObject({ status: 400, body: { error: "server_not_found" } });
  expect(Object.keys(await stages(project)).sort()).toEqual(["main", "qa"]);
});
