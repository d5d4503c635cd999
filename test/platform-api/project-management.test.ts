// Making, changing and deleting projects and environments through the platform API (what
// the dashboard's forms use): the public API's rules and messages, the platform's roles.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";

let cp: TestControlPlane;
let d: DemoOrganization;
let admin: Person;
let projectAdmin: Person;
let member: Person;
let outsider: Person;

beforeAll(async () => {
  cp = await startControlPlane();
  d = await createDemoOrganization(cp.database.db, cp.app.services);
  admin = await addPerson(cp.app, "org_admin", { organizationId: d.organization_id });
  projectAdmin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  const elsewhere = await createDemoOrganization(cp.database.db, cp.app.services);
  outsider = await addPerson(cp.app, "org_owner", { organizationId: elsewhere.organization_id });
});
afterAll(async () => cp?.close());

const visible = async (who: Person) =>
  (await who.api.get(`/organizations/${d.organization_id}/projects`)).body.data as { id: string; name: string; environments: { name: string; cpu_cores: number; ram_mb: number; disk_gb: number; git_branch: string; domain: string | null }[] }[];

it("an organisation admin creates, renames and deletes a project; the refusals say why", async () => {
  const create = (who: Person, body: object) => who.api.post(`/organizations/${d.organization_id}/projects`, body);
  const res = await create(admin, { name: "Shop", server_id: d.server_id, erp_version: "17.0", default_branch: "main", git_repo_url: "https://git.example.com/acme/shop.git" });
  expect(res.status).toBe(201);
  expect(res.body).toMatchObject({ name: "Shop", erp_version: "17.0", server_id: d.server_id, default_branch: "main", environment_count: 0 });
  const id = res.body.id as string;
  expect((await visible(admin)).map((p) => p.name)).toContain("Shop");

  expect(await create(member, { name: "Nope", server_id: d.server_id })).toMatchObject({ status: 403, body: { error: "permission_denied", message: "You don't have permission to manage projects." } });
  expect(await create(outsider, { name: "Nope", server_id: d.server_id })).toMatchObject({ status: 404, body: { error: "not_found" } });
  expect(await create(admin, { name: "Nope", server_id: crypto.randomUUID() })).toMatchObject({ status: 400, body: { error: "server_not_found" } });
  expect(await create(admin, { name: "Nope", server_id: d.server_id, erp_version: "12.0" })).toMatchObject({ status: 400, body: { error: "unsupported_erp_version" } });
  expect((await create(admin, { name: "", server_id: d.server_id })).body.error).toBe("validation_error");

  const renamed = await admin.api.patch(`/projects/${id}`, { name: "Shop (live)", git_repo_url: null });
  expect(renamed.status).toBe(200);
  expect(renamed.body).toMatchObject({ name: "Shop (live)", git_repo_url: null });
  expect((await projectAdmin.api.patch(`/projects/${id}`, { name: "x" })).status).toBe(404); // not their project
  expect((await projectAdmin.api.patch(`/projects/${d.project_id}`, { name: "x" })).body.error).toBe("permission_denied");

  expect((await admin.api.delete(`/projects/${id}`)).status).toBe(204);
  expect((await visible(admin)).map((p) => p.id)).not.toContain(id);
  expect((await admin.api.delete(`/projects/${id}`)).status).toBe(404);
});

it("a project admin adds a sized environment to their project; names are unique per project", async () => {
  const res = await projectAdmin.api.post(`/projects/${d.project_id}/environments`, { name: "qa", git_branch: "develop", domain: "qa.shop.example.com", cpu_cores: 2, ram_mb: 3072, disk_gb: 30 });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  expect(res.body).toMatchObject({ name: "qa", status: "pending", git_branch: "develop", domain: "qa.shop.example.com", project_id: d.project_id });
  const env = (await visible(projectAdmin)).find((p) => p.id === d.project_id)!.environments.find((e) => e.name === "qa");
  expect(env).toMatchObject({ cpu_cores: 2, ram_mb: 3072, disk_gb: 30, git_branch: "develop" });

  const again = await projectAdmin.api.post(`/projects/${d.project_id}/environments`, { name: "qa" });
  expect(again).toMatchObject({ status: 409, body: { error: "environment_name_taken" } });
  const small = await projectAdmin.api.post(`/projects/${d.project_id}/environments`, { name: "tiny", ram_mb: 100 });
  expect(small.status).toBe(400);
  expect(small.body.details[0].path).toBe("body/ram_mb");
  expect((await member.api.post(`/projects/${d.project_id}/environments`, { name: "mine" })).body).toMatchObject({ error: "permission_denied", message: "You don't have permission to change environments." });
  expect((await outsider.api.post(`/projects/${d.project_id}/environments`, { name: "mine" })).status).toBe(404);
});
