// A task whose command cannot be built (here: the environment's ERP master password, sealed
// with another master key, does not open) fails at once with the reason, through the public
// API as a user sees it; the request is answered, and the dispatcher's repair sweep goes on
// with the next waiting operation instead of stopping at the broken one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { seal } from "../../apps/control-plane/src/lib/master-key.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";

let cp: TestControlPlane;
let demo: DemoOrganization;
/** Another instance's master key: what the database holds after a restore onto the wrong instance. */
const OTHER_KEY = Buffer.alloc(32, 9);

beforeAll(async () => {
  cp = await startControlPlane();
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
});
afterAll(async () => cp?.close());

const unreadablePassword = (environmentId: string) =>
  cp.database.pool.query("update environments set admin_passwd_enc = $2, admin_passwd_set_at = now() where id = $1", [environmentId, seal(OTHER_KEY, "a-password-this-instance-cannot-open")]);
const commandsOf = async (deploymentId: string) =>
  (await cp.database.pool.query<{ state: string; type: string }>("select state, type from agent_commands where deployment_id = $1", [deploymentId])).rows;

describe("a command that cannot be built", () => {
  it("fails its task with a code and a message saying what to do; after the fix the next deploy is sent", async () => {
    const api = publicClient(cp.app, demo.api_keys.org_rw);
    const env = demo.environments.running;
    await unreadablePassword(env);

    const res = await api.post(`/environments/${env}/deploy`);
    expect(res.status).toBe(202);
    const task = await api.get(`/deployments/${res.body.task_id}`);
    expect(task.body).toMatchObject({ status: "failed" });
    expect(task.body.error_message).toMatch(/^The command could not be built \(secret_unreadable\): the environment's ERP master password does not open/);
    expect(task.body.error_message).toContain("admin-password/rotate");
    // Nothing was sent to the server, and the task's log says why, with the code.
    expect(await commandsOf(res.body.task_id)).toEqual([]);
    const logs = await api.get(`/deployments/${res.body.task_id}/logs`);
    expect(logs.body.data).toContainEqual(expect.objectContaining({ level: "error", message: task.body.error_message, data: { code: "secret_unreadable", failed_by: "dispatcher" } }));
    // The environment is free for the next task: rotated, the password opens and the deploy goes out.
    expect((await api.post(`/environments/${env}/admin-password/rotate`)).status).toBe(200);
    const again = await api.post(`/environments/${env}/deploy`);
    expect(again.status).toBe(202);
    expect(await commandsOf(again.body.task_id)).toEqual([{ state: "pending", type: "deploy" }]);
    expect((await api.post(`/deployments/${again.body.task_id}/cancel`)).status).toBe(200);
  });

  it("does not hold up the repair sweep: the next waiting operation is still sent", async () => {
    const scope = { organizationId: demo.organization_id, projectId: null };
    const actor = { userId: null, apiKeyId: null };
    const { pool } = cp.database;
    // Two operations written, their commands lost (a crash between write and dispatch):
    // first a deploy whose password then stops opening, then a start of another environment.
    const broken = await cp.app.services.deployments.requestAction(scope, demo.environments.running, "deploy", actor);
    const next = await cp.app.services.deployments.requestAction(scope, demo.environments.stopped, "start", actor);
    await pool.query("delete from agent_commands where deployment_id = any($1::uuid[])", [[broken.id, next.id]]);
    await unreadablePassword(demo.environments.running);

    await expect(cp.app.services.dispatcher.dispatchPending()).resolves.toBe(2);

    const api = publicClient(cp.app, demo.api_keys.org_rw);
    expect((await api.get(`/deployments/${broken.id}`)).body).toMatchObject({ status: "failed", error_message: expect.stringContaining("(secret_unreadable)") });
    expect(await commandsOf(broken.id)).toEqual([]);
    expect((await api.get(`/deployments/${next.id}`)).body).toMatchObject({ status: "queued" });
    expect(await commandsOf(next.id)).toEqual([{ state: "pending", type: "start" }]);
  });
});
