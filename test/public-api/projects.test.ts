// Projects: create, read, partial update, and the delete rules of public spec 4.3.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

describe("create", () => {
  it("returns 201 with every field, defaults applied, and the project is listed", async () => {
    const { rw, ro, d } = await freshOrganization(cp);
    const res = await rw.post("/projects", { name: "Shop", server_id: d.server_id });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Shop",
      erp_version: null,
      git_repo_url: null,
      default_branch: "main",
      environment_count: 0,
      server_id: d.server_id,
      development_server_id: null,
      development_limit: 3,
      created_at: expect.any(String),
    });
    const list = await ro.get("/projects");
    expect(list.body.data.map((p: { id: string }) => p.id)).toContain(res.body.id);
    expect((await ro.get(`/projects/${res.body.id}`)).body).toEqual(res.body);
  });

  it("keeps only major.minor of the ERP version and refuses unsupported ones", async () => {
    const { rw, d } = await freshOrganization(cp);
    const ok = await rw.post("/projects", { name: "A", server_id: d.server_id, erp_version: "17.0.1.3" });
    expect(ok.body.erp_version).toBe("17.0");
    for (const bad of ["12.0", "nonsense", "20.0"]) {
      const res = await rw.post("/projects", { name: "B", server_id: d.server_id, erp_version: bad });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("unsupported_erp_version");
    }
  });

  it.each([
    [{ name: "x".repeat(256) }, "body/name"],
    [{ name: "" }, "body/name"],
    [{ default_branch: "b".repeat(256) }, "body/default_branch"],
    [{ git_repo_url: "" }, "body/git_repo_url"],
    [{ server_id: "not-a-uuid" }, "body/server_id"],
    [{ surprise: true }, "body/surprise"],
  ])("refuses %o with a validation_error naming %s", async (patch, path) => {
    const { rw, d } = await freshOrganization(cp);
    const res = await rw.post("/projects", { name: "ok", server_id: d.server_id, ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("validation_error");
    expect(res.body.details.map((x: { path: string }) => x.path)).toContain(path);
  });

  it("accepts a name and branch of exactly 255 characters", async () => {
    const { rw, d } = await freshOrganization(cp);
    const res = await rw.post("/projects", { name: "n".repeat(255), default_branch: "b".repeat(255), server_id: d.server_id });
    expect(res.status).toBe(201);
  });

  it("refuses a missing server_id and an unknown server", async () => {
    const { rw } = await freshOrganization(cp);
    const missing = await rw.post("/projects", { name: "x" });
    expect(missing.status).toBe(400);
    expect(missing.body.details[0].path).toBe("body/server_id");
    const unknown = await rw.post("/projects", { name: "x", server_id: crypto.randomUUID() });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toBe("server_not_found");
  });
});

describe("update", () => {
  it("changes only the fields sent", async () => {
    const { rw, d } = await freshOrganization(cp);
    const before = (await rw.get(`/projects/${d.project_id}`)).body;
    const renamed = await rw.patch(`/projects/${d.project_id}`, { name: "Renamed" });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toEqual({ ...before, name: "Renamed" });
    const branch = await rw.patch(`/projects/${d.project_id}`, { default_branch: "develop", git_repo_url: "https://git.example.com/new.git" });
    expect(branch.body).toEqual({ ...before, name: "Renamed", default_branch: "develop", git_repo_url: "https://git.example.com/new.git" });
    const nothing = await rw.patch(`/projects/${d.project_id}`, {});
    expect(nothing.body).toEqual(branch.body);
  });

  it("refuses server_id and erp_version changes (not updatable) and bad values", async () => {
    const { rw, d } = await freshOrganization(cp);
    for (const body of [{ server_id: d.server_id }, { name: "" }, { default_branch: "x".repeat(256) }]) {
      const res = await rw.patch(`/projects/${d.project_id}`, body);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe("validation_error");
    }
  });

  it("is a 404 for an unknown project", async () => {
    const { rw } = await freshOrganization(cp);
    const res = await rw.patch(`/projects/${crypto.randomUUID()}`, { name: "x" });
    expect(res.status).toBe(404);
    expect(res.body.error).toBe("not_found");
  });
});

describe("delete", () => {
  it.each([undefined, "TRUE", "yes", "1", "true "])("needs X-Confirm-Delete exactly 'true' (got %s)", async (value) => {
    const { rw, ro, d } = await freshOrganization(cp);
    const res = await rw.delete(`/projects/${d.project_id}`, value === undefined ? {} : { "x-confirm-delete": value });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe("confirm_required");
    expect((await ro.get(`/projects/${d.project_id}`)).status).toBe(200);
  });

  it("is refused with 409 environments_running while an environment runs", async () => {
    const { rw, d } = await freshOrganization(cp);
    const res = await rw.delete(`/projects/${d.project_id}`, { "x-confirm-delete": "true" });
    expect(res.status).toBe(409);
    expect(res.body.error).toBe("environments_running");
  });

  it("is refused while an environment is deploying or has a queued task", async () => {
    const { rw, d } = await freshOrganization(cp);
    const { pool } = cp.database;
    await pool.query("update environments set status = 'stopped' where project_id = $1", [d.project_id]);
    const task = await rw.post(`/environments/${d.environments.stopped}/deploy`);
    expect(task.status).toBe(202);
    const queued = await rw.delete(`/projects/${d.project_id}`, { "x-confirm-delete": "true" });
    expect(queued.status).toBe(409);
    expect(queued.body.error).toBe("environments_running");
    await pool.query("update deployments set status = 'success' where id = $1", [task.body.task_id]);
    await pool.query("update environments set status = 'deploying' where id = $1", [d.environments.stopped]);
    const deploying = await rw.delete(`/projects/${d.project_id}`, { "x-confirm-delete": "true" });
    expect(deploying.status).toBe(409);
  });

  it("soft-deletes an idle project: 204, then 404 and gone from lists and counts", async () => {
    const { rw, ro, d } = await freshOrganization(cp);
    await cp.database.pool.query("update environments set status = 'stopped' where project_id = $1", [d.project_id]);
    const serverBefore = (await ro.get(`/servers/${d.server_id}`)).body.environment_count;
    expect(serverBefore).toBe(2);
    const res = await rw.delete(`/projects/${d.project_id}`, { "x-confirm-delete": "true" });
    expect(res.status).toBe(204);
    expect(res.body).toBe("");
    expect((await ro.get(`/projects/${d.project_id}`)).status).toBe(404);
    expect((await ro.get(`/environments/${d.environments.running}`)).status).toBe(404);
    expect((await ro.get("/projects")).body.pagination.total).toBe(0);
    expect((await ro.get(`/servers/${d.server_id}`)).body.environment_count).toBe(0);
    const { rows } = await cp.database.pool.query("select deleted_at from projects where id = $1", [d.project_id]);
    expect(rows[0].deleted_at).not.toBeNull();
    const again = await rw.delete(`/projects/${d.project_id}`, { "x-confirm-delete": "true" });
    expect(again.status).toBe(404);
  });
});
