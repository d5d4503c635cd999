// Retry and rollback over the public API (POST /deployments/{id}/retry|rollback): the
// platform API's rules (a failed task is retried, a successful deploy rolled back to), the
// public action answer, full-access keys in scope only, and idempotent replay.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { expectActionResponse, expectError, freshOrganization, taskCount } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
});
afterAll(async () => cp?.close());

type Fresh = Awaited<ReturnType<typeof freshOrganization>>;

/** A finished task of `kind` on the running environment, requested through the service, then set to `status`. */
async function finished(f: Fresh, status: "failed" | "success", kind: "deploy" | "restart" = "deploy"): Promise<string> {
  const row = await cp.app.services.deployments.requestAction({ organizationId: f.d.organization_id, projectId: null }, f.d.environments.running, kind, {
    userId: null,
    apiKeyId: null,
  });
  await cp.database.pool.query("update deployments set status = $2, completed_at = now() where id = $1", [row.id, status]);
  return row.id;
}

async function deployment(id: string) {
  const { rows } = await cp.database.pool.query("select kind, status, trigger, api_key_id, triggered_by, rollback_from_id, extra_data from deployments where id = $1", [id]);
  return rows[0];
}

describe("retry", () => {
  it("a failed deploy runs again as a new queued task that names the original", async () => {
    const f = await freshOrganization(cp);
    const failed = await finished(f, "failed");
    const res = await f.rw.post(`/deployments/${failed}/retry`);
    expect(res.status).toBe(202);
    const taskId = expectActionResponse(res.body, f.d.environments.running);
    expect(res.body.admin_password).toBeUndefined();
    expect(taskId).not.toBe(failed);
    const row = await deployment(taskId);
    expect(row).toMatchObject({ kind: "deploy", status: "queued", trigger: "manual", triggered_by: null, extra_data: expect.objectContaining({ retry_of: failed }) });
    expect(row.api_key_id).toEqual(expect.any(String));
    const polled = await f.rw.get(res.body.poll_url.replace("/api/public/v1", ""));
    expect(polled.status).toBe(200);
    expect(polled.body).toMatchObject({ id: taskId, type: "deploy", status: "queued" });
  });

  it("only a failed task: a successful one is 400 not_retryable and nothing is created", async () => {
    const f = await freshOrganization(cp);
    const done = await finished(f, "success");
    const before = await taskCount(cp, f.d.environments.running);
    const res = await f.rw.post(`/deployments/${done}/retry`);
    expectError(res, 400, "not_retryable");
    expect(res.body.message).toBe("Can only retry failed deployments");
    expect(await taskCount(cp, f.d.environments.running)).toBe(before);
  });

  it("another task queued on the environment is 409 task_in_progress", async () => {
    const f = await freshOrganization(cp);
    const failed = await finished(f, "failed");
    expect((await f.rw.post(`/environments/${f.d.environments.running}/restart`)).status).toBe(202);
    expectError(await f.rw.post(`/deployments/${failed}/retry`), 409, "task_in_progress");
  });
});

describe("rollback", () => {
  it("back to a successful deploy: a queued rollback task naming the target and the current deployment", async () => {
    const f = await freshOrganization(cp);
    const target = await finished(f, "success");
    const current = await finished(f, "success");
    const res = await f.rw.post(`/deployments/${target}/rollback`);
    expect(res.status).toBe(202);
    const taskId = expectActionResponse(res.body, f.d.environments.running);
    expect(await deployment(taskId)).toMatchObject({
      kind: "rollback",
      status: "queued",
      trigger: "rollback",
      rollback_from_id: current,
      extra_data: expect.objectContaining({ rollback_to: target }),
    });
  });

  it.each([
    ["a failed deploy", "failed", "deploy", "not_rollback_target"],
    ["a successful restart", "success", "restart", "not_rollback_target"],
  ] as const)("%s is 400 %s and nothing is created", async (_label, status, kind, code) => {
    const f = await freshOrganization(cp);
    const id = await finished(f, status, kind);
    const before = await taskCount(cp, f.d.environments.running);
    expectError(await f.rw.post(`/deployments/${id}/rollback`), 400, code);
    expect(await taskCount(cp, f.d.environments.running)).toBe(before);
  });

  it("a destroyed (inactive) environment is 400 environment_inactive", async () => {
    const f = await freshOrganization(cp);
    const target = await finished(f, "success");
    await cp.database.pool.query("update environments set is_active = false where id = $1", [f.d.environments.running]);
    expectError(await f.rw.post(`/deployments/${target}/rollback`), 400, "environment_inactive");
  });

  it("another task queued on the environment is 409 task_in_progress", async () => {
    const f = await freshOrganization(cp);
    const target = await finished(f, "success");
    expect((await f.rw.post(`/environments/${f.d.environments.running}/restart`)).status).toBe(202);
    expectError(await f.rw.post(`/deployments/${target}/rollback`), 409, "task_in_progress");
  });
});

describe("who may", () => {
  it.each(["retry", "rollback"] as const)("%s: read-only keys 403, other organisations' and other projects' keys 404, the project's own key 202", async (action) => {
    const f = await freshOrganization(cp);
    const id = await finished(f, action === "retry" ? "failed" : "success");
    const before = await taskCount(cp, f.d.environments.running);

    expectError(await f.ro.post(`/deployments/${id}/${action}`), 403, "read_only_key");
    expectError(await publicClient(cp.app, f.d.api_keys.project_ro).post(`/deployments/${id}/${action}`), 403, "read_only_key");

    const stranger = await freshOrganization(cp);
    expectError(await stranger.rw.post(`/deployments/${id}/${action}`), 404, "not_found");

    const other = await cp.app.services.projects.create({ organizationId: f.d.organization_id, projectId: null }, { name: "Other ERP", server_id: f.d.server_id, default_branch: "main" });
    const otherKey = await cp.app.services.apiKeys.create({ organizationId: f.d.organization_id, projectId: other.id, access: "full_access", name: "other project", createdBy: null });
    expectError(await publicClient(cp.app, otherKey.key).post(`/deployments/${id}/${action}`), 404, "not_found");
    expectError(await f.rw.post(`/deployments/${crypto.randomUUID()}/${action}`), 404, "not_found");
    expect(await taskCount(cp, f.d.environments.running)).toBe(before);

    const own = await publicClient(cp.app, f.d.api_keys.project_rw).post(`/deployments/${id}/${action}`);
    expect(own.status).toBe(202);
    expect(await taskCount(cp, f.d.environments.running)).toBe(before + 1);
  });
});

describe("idempotency", () => {
  it.each([
    ["retry", "idempotency-key"],
    ["rollback", "x-idempotency-key"],
  ] as const)("%s with %s: the same key answers the same task once, without it the environment is busy", async (action, header) => {
    const f = await freshOrganization(cp);
    const id = await finished(f, action === "retry" ? "failed" : "success");
    const k = crypto.randomUUID();
    const first = await f.rw.post(`/deployments/${id}/${action}`, undefined, { [header]: k });
    expect(first.status).toBe(202);
    const before = await taskCount(cp, f.d.environments.running);
    const again = await f.rw.post(`/deployments/${id}/${action}`, undefined, { [header]: k });
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers["x-idempotency-replayed"]).toBe("true");
    expect(await taskCount(cp, f.d.environments.running)).toBe(before);
    expectError(await f.rw.post(`/deployments/${id}/${action}`), 409, "task_in_progress");
  });
});
