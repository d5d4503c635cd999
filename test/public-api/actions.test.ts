// Environment actions (public spec 3, 4.1, 4.2): preconditions, one active task per
// environment under real concurrency, task polling.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({ listen: true });
});
afterAll(async () => cp?.close());

const fresh = () => freshOrganization(cp);

describe("preconditions", () => {
  it.each([
    ["restart", "stopped", 409, "environment_not_running"],
    ["stop", "stopped", 409, "environment_not_running"],
    ["start", "running", 409, "environment_not_stopped"],
    ["restart", "pending", 409, "environment_not_running"],
    ["start", "error", 409, "environment_not_stopped"],
    ["restart", "running", 202, null],
    ["stop", "running", 202, null],
    ["start", "stopped", 202, null],
    ["deploy", "pending", 202, null],
    ["deploy", "running", 202, null],
    ["deploy", "error", 202, null],
    ["actions/redeploy", "stopped", 202, null],
  ] as const)("%s on a %s environment answers %i %s", async (action, status, code, error) => {
    const { d, rw } = await fresh();
    await cp.database.pool.query("update environments set status = $2 where id = $1", [d.environments.running, status]);
    const res = await rw.post(`/environments/${d.environments.running}/${action}`);
    expect(res.status).toBe(code);
    if (error) {
      expect(res.body.error).toBe(error);
      const { rows } = await cp.database.pool.query("select count(*)::int as n from deployments where environment_id = $1", [d.environments.running]);
      expect(rows[0].n).toBe(0);
    } else {
      expect(res.body).toEqual({
        task_id: expect.any(String),
        status: "queued",
        environment_id: d.environments.running,
        poll_url: `/api/public/v1/deployments/${res.body.task_id}`,
        // The environment's first deploy shows its new ERP master and administrator passwords once.
        ...(action.endsWith("deploy")
          ? { admin_password: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/), admin_login_password: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) }
          : {}),
      });
    }
  });

  it("an unknown environment is a 404, a malformed id a 400", async () => {
    const { rw } = await fresh();
    expect((await rw.post(`/environments/${crypto.randomUUID()}/deploy`)).status).toBe(404);
    const bad = await rw.post("/environments/not-a-uuid/deploy");
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("validation_error");
  });
});

describe("one active task per environment", () => {
  it("a second action while one is queued gets 409 task_in_progress, on every action path", async () => {
    const { d, rw } = await fresh();
    const first = await rw.post(`/environments/${d.environments.running}/deploy`);
    expect(first.status).toBe(202);
    for (const path of ["deploy", "restart", "stop", "actions/deploy", "actions/redeploy", "actions/restart", "actions/stop"]) {
      const res = await rw.post(`/environments/${d.environments.running}/${path}`);
      expect(res.status).toBe(409);
      expect(res.body.error).toBe("task_in_progress");
    }
    // Another environment is not affected.
    expect((await rw.post(`/environments/${d.environments.stopped}/start`)).status).toBe(202);
  });

  it("of 12 truly concurrent deploys over HTTP exactly one wins", async () => {
    const { d } = await fresh();
    const keys = await Promise.all(
      Array.from({ length: 3 }, (_, i) =>
        cp.app.services.apiKeys.create({ organizationId: d.organization_id, projectId: null, access: "full_access", name: `c${i}`, createdBy: null }),
      ),
    );
    const address = cp.app.server.address();
    if (!address || typeof address !== "object") throw new Error("not listening");
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        fetch(`http://127.0.0.1:${address.port}/api/public/v1/environments/${d.environments.running}/deploy`, {
          method: "POST",
          headers: { authorization: `Bearer ${keys[i % 3]!.key}` },
        }).then(async (r) => ({ status: r.status, body: await r.json() })),
      ),
    );
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    const losers = results.filter((r) => r.status !== 202);
    expect(losers).toHaveLength(11);
    for (const l of losers) {
      expect(l.status).toBe(409);
      expect(l.body.error).toBe("task_in_progress");
    }
    const { rows } = await cp.database.pool.query("select version from deployments where environment_id = $1", [d.environments.running]);
    expect(rows).toEqual([{ version: 1 }]);
  });

  it("once the task ends, the next action is accepted and gets the next version", async () => {
    const { d, rw } = await fresh();
    const first = await rw.post(`/environments/${d.environments.running}/restart`);
    await cp.database.pool.query("update deployments set status = 'failed' where id = $1", [first.body.task_id]);
    const second = await rw.post(`/environments/${d.environments.running}/restart`);
    expect(second.status).toBe(202);
    const { rows } = await cp.database.pool.query("select version from deployments where environment_id = $1 order by version", [d.environments.running]);
    expect(rows.map((r: { version: number }) => r.version)).toEqual([1, 2]);
  });
});

describe("task polling", () => {
  it("shows every field of the task; a queued task stays queued until an agent runs it", async () => {
    const { d, rw } = await fresh();
    const action = await rw.post(`/environments/${d.environments.running}/deploy`);
    const task = await rw.get(action.body.poll_url.replace("/api/public/v1", ""));
    expect(task.status).toBe(200);
    expect(task.body).toEqual({
      id: action.body.task_id,
      type: "deploy",
      status: "queued",
      environment_id: d.environments.running,
      progress_percent: 0,
      current_step: null,
      steps_completed: 0,
      total_steps: 17,
      started_at: null,
      completed_at: null,
      duration_seconds: null,
      error_message: null,
      triggered_by: null,
      created_at: expect.any(String),
      modules: null,
      tests: null,
    });
  });

  it("projects the stored operation: running step names, duration, failure message", async () => {
    const { d, rw } = await fresh();
    const action = await rw.post(`/environments/${d.environments.running}/deploy`);
    await cp.database.pool.query(
      `update deployments set status = 'deploying', current_step = 'pulling_image', steps_completed = 8, progress_percent = 47,
       started_at = now() - interval '90 seconds' where id = $1`,
      [action.body.task_id],
    );
    const running = (await rw.get(`/deployments/${action.body.task_id}`)).body;
    expect(running).toMatchObject({ status: "running", current_step: "Pulling image", steps_completed: 8, progress_percent: 47, duration_seconds: null });
    await cp.database.pool.query(
      "update deployments set status = 'failed', error_message = 'image not found', completed_at = started_at + interval '95 seconds' where id = $1",
      [action.body.task_id],
    );
    const failed = (await rw.get(`/deployments/${action.body.task_id}`)).body;
    expect(failed).toMatchObject({ status: "failed", error_message: "image not found", duration_seconds: 95 });
  });

  it("an unknown task is a 404", async () => {
    const { rw } = await fresh();
    const res = await rw.get(`/deployments/${crypto.randomUUID()}`);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ error: "not_found", message: "Task not found", request_id: res.headers["x-request-id"] });
  });
});
