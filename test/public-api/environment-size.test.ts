// Resizing an environment through both APIs: the new size is the environment's at once, its
// bounds are the creation's (same messages), read-only keys and members without the
// permission are refused, and the next deploy runs with it (its recorded config).
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person } from "../support/people.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

it("a full-access key changes the size; the next deploy is recorded with it", async () => {
  const { d, rw, ro } = await freshOrganization(cp);
  const env = d.environments.stopped;
  const before = (await ro.get(`/environments/${env}`)).body;

  const res = await rw.patch(`/environments/${env}`, { cpu_cores: 3, ram_mb: 6144, workers: 5 });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ cpu_cores: 3, ram_mb: 6144, disk_gb: before.disk_gb, workers: 5, domain: before.domain });
  expect((await ro.get(`/environments/${env}`)).body).toMatchObject({ cpu_cores: 3, ram_mb: 6144, workers: 5 });

  const deploy = await rw.post(`/environments/${env}/deploy`, {});
  expect(deploy.status).toBe(202);
  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const recorded = await owner.api.get(`/deployments/${deploy.body.task_id}`);
  expect(recorded.body.extra_data.config).toMatchObject({ cpu_cores: 3, ram_mb: 6144, disk_gb: before.disk_gb, workers: 5 });
});

it("refuses sizes out of bounds with the creation's messages, and read-only keys", async () => {
  const { d, rw, ro } = await freshOrganization(cp);
  const env = d.environments.stopped;
  const small = await rw.patch(`/environments/${env}`, { ram_mb: 100 });
  expect(small).toMatchObject({ status: 400, body: { error: "validation_error" } });
  expect(small.body.details).toContainEqual(expect.objectContaining({ path: "body/ram_mb", message: "must be >= 256" }));
  expect((await rw.patch(`/environments/${env}`, { cpu_cores: 65 })).body.details[0].path).toBe("body/cpu_cores");
  expect((await rw.patch(`/environments/${env}`, { workers: 1.5 })).status).toBe(400);
  expect((await ro.patch(`/environments/${env}`, { cpu_cores: 2 })).status).toBe(403);
  expect((await ro.get(`/environments/${env}`)).body.ram_mb).not.toBe(100);
});

it("through the platform API: a project admin resizes, a project member may not", async () => {
  const { d } = await freshOrganization(cp);
  const env = d.environments.stopped;
  const admin: Person = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
  const member: Person = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
  const path = `/projects/${d.project_id}/environments/${env}`;

  const res = await admin.api.patch(path, { disk_gb: 80, git_branch: "release" });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({ disk_gb: 80, git_branch: "release" });
  expect(await member.api.patch(path, { disk_gb: 90 })).toMatchObject({ status: 403, body: { error: "permission_denied" } });
  const refused = await admin.api.patch(path, { disk_gb: 0 });
  expect(refused.body.details).toContainEqual(expect.objectContaining({ path: "body/disk_gb" }));
});
