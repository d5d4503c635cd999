// Public API actions reach the agent as signed commands, and the agent's step and result
// events become the task's progress and the environment's status.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { DEPLOY_STEP_IDS, type Event, type SignedCommand, type StepId } from "@berth/protocol";
import { useTestImages } from "../support/real-agent.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { demoOrganizationWithAgent } from "../support/demo-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";

let cp: TestControlPlane;
let base: string;

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000 });
  const a = cp.app.server.address() as { port: number };
  base = `http://127.0.0.1:${a.port}`;
  await useTestImages(cp);
});
afterAll(async () => cp?.close());

/** A demo organisation whose project runs on a server with a connected simulated agent. */
const withAgent = (onCommand: (cmd: SignedCommand, agent: SimAgent) => void) => demoOrganizationWithAgent(cp, base, onCommand);

function runSteps(a: SimAgent, cmd: SignedCommand, steps: readonly StepId[], outcome: { failAt?: StepId }) {
  const deployment_id = (cmd.params as { deployment_id: string }).deployment_id;
  const events: Event[] = [];
  for (const step of steps) {
    events.push(a.event({ kind: "step.started", command_id: cmd.command_id, deployment_id, step }));
    if (step === outcome.failAt) {
      events.push(a.event({ kind: "step.failed", command_id: cmd.command_id, deployment_id, step, error: { code: "image_missing", message: "image berth-test/erp:17.0 not found" } }));
      events.push(a.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error: { code: "image_missing", message: "image berth-test/erp:17.0 not found" } }));
      return a.sendEvents(events);
    }
    events.push(a.event({ kind: "step.finished", command_id: cmd.command_id, deployment_id, step }));
  }
  events.push(a.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result: { container_id: "c0ffee", container_name: "berth-erp", image: "berth-test/erp:17.0", commit: "abc1234" } }));
  a.sendEvents(events);
}

async function poll(api: ReturnType<typeof publicClient>, taskId: string, until: (t: { status: string }) => boolean) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const t = (await api.get(`/deployments/${taskId}`)).body;
    if (until(t)) return t;
    if (Date.now() > deadline) throw new Error(`task stuck: ${JSON.stringify(t)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("deploy through the public API", () => {
  it("becomes one signed deploy command with the environment's settings", async () => {
    let received: SignedCommand | undefined;
    const { d, stop } = await withAgent((cmd) => (received = cmd));
    try {
      const api = publicClient(cp.app, d.api_keys.org_rw);
      const task = await api.post(`/environments/${d.environments.running}/deploy`);
      await new Promise((r) => setTimeout(r, 500));
      expect(received).toBeDefined();
      expect(received!.type).toBe("deploy");
      expect(received!.params).toMatchObject({
        deployment_id: task.body.task_id,
        environment_id: d.environments.running,
        erp_version: "17.0",
        image: "berth-test/erp:17.0",
        db_image: "berth-test/postgres:15",
        git: { url: "https://git.example.com/demo/erp-addons.git", branch: "main", commit: null },
        resources: { cpu_cores: 1, ram_mb: 2048, disk_gb: 20, workers: 2 },
      });
      const { rows } = await cp.database.pool.query("select count(*)::int as n, min(issued_by) as by from agent_commands where deployment_id = $1", [task.body.task_id]);
      expect(rows[0]).toMatchObject({ n: 1, by: expect.stringMatching(/^api_key:/) });
    } finally {
      stop();
    }
  });

  it("reports progress step by step and ends completed, with the environment running", async () => {
    const { d, stop } = await withAgent((cmd, a) => runSteps(a, cmd, DEPLOY_STEP_IDS, {}));
    try {
      const api = publicClient(cp.app, d.api_keys.org_ro);
      await cp.database.pool.query("update environments set status = 'stopped' where id = $1", [d.environments.running]);
      const task = await publicClient(cp.app, d.api_keys.org_rw).post(`/environments/${d.environments.running}/deploy`);
      const done = await poll(api, task.body.task_id, (t) => t.status === "completed");
      expect(done).toMatchObject({ progress_percent: 100, steps_completed: 17, total_steps: 17, current_step: "Completed", error_message: null });
      expect(done.started_at).not.toBeNull();
      expect(done.duration_seconds).toBeGreaterThanOrEqual(0);
      const env = (await api.get(`/environments/${d.environments.running}`)).body;
      expect(env).toMatchObject({ status: "running", container_id: "c0ffee", container_name: "berth-erp" });
    } finally {
      stop();
    }
  });

  it("a failing step fails the task with the agent's message and the environment goes to error", async () => {
    const { d, stop } = await withAgent((cmd, a) => runSteps(a, cmd, DEPLOY_STEP_IDS, { failAt: "pulling_image" }));
    try {
      const api = publicClient(cp.app, d.api_keys.org_ro);
      const task = await publicClient(cp.app, d.api_keys.org_rw).post(`/environments/${d.environments.running}/deploy`);
      const failed = await poll(api, task.body.task_id, (t) => t.status === "failed");
      expect(failed).toMatchObject({ error_message: "image berth-test/erp:17.0 not found", steps_completed: 8, current_step: "Pulling image" });
      expect((await api.get(`/environments/${d.environments.running}`)).body.status).toBe("error");
    } finally {
      stop();
    }
  });

  it("stop and start move the environment between running and stopped", async () => {
    const { d, stop } = await withAgent((cmd, a) => runSteps(a, cmd, cmd.type === "stop" ? ["initializing", "connecting", "completed"] : ["initializing", "connecting", "starting_container", "health_check", "completed"], {}));
    try {
      const rw = publicClient(cp.app, d.api_keys.org_rw);
      const ro = publicClient(cp.app, d.api_keys.org_ro);
      const stopTask = await rw.post(`/environments/${d.environments.running}/stop`);
      await poll(ro, stopTask.body.task_id, (t) => t.status === "completed");
      expect((await ro.get(`/environments/${d.environments.running}`)).body.status).toBe("stopped");
      const startTask = await rw.post(`/environments/${d.environments.running}/start`);
      const started = await poll(ro, startTask.body.task_id, (t) => t.status === "completed");
      expect(started).toMatchObject({ type: "start", steps_completed: 5, total_steps: 5 });
      expect((await ro.get(`/environments/${d.environments.running}`)).body.status).toBe("running");
    } finally {
      stop();
    }
  });
});

describe("a server whose agent is away", () => {
  it("keeps the task queued, then fails it with a clear message once it times out", async () => {
    const d: DemoOrganization = await createDemoOrganization(cp.database.db, cp.app.services);
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const task = await api.post(`/environments/${d.environments.running}/restart`);
    await cp.app.maintenance.runOnce();
    expect((await api.get(`/deployments/${task.body.task_id}`)).body.status).toBe("queued");
    cp.clock.advance(31 * 60_000);
    try {
      await cp.app.maintenance.runOnce();
      const failed = (await api.get(`/deployments/${task.body.task_id}`)).body;
      expect(failed.status).toBe("failed");
      expect(failed.error_message).toMatch(/server was offline.*30 minutes/);
      // Nothing ran, so the environment is as it was.
      expect((await api.get(`/environments/${d.environments.running}`)).body.status).toBe("running");
    } finally {
      cp.clock.advance(-31 * 60_000);
    }
  });

  it("a row left without a command (crash between write and dispatch) is dispatched by the sweep", async () => {
    const d = await createDemoOrganization(cp.database.db, cp.app.services);
    const api = publicClient(cp.app, d.api_keys.org_rw);
    const task = await api.post(`/environments/${d.environments.running}/restart`);
    await cp.database.pool.query("delete from agent_commands where deployment_id = $1", [task.body.task_id]);
    await cp.app.maintenance.runOnce();
    const { rows } = await cp.database.pool.query("select type, state from agent_commands where deployment_id = $1", [task.body.task_id]);
    expect(rows).toEqual([{ type: "restart", state: "pending" }]);
    await cp.app.maintenance.runOnce();
    const again = await cp.database.pool.query("select count(*)::int as n from agent_commands where deployment_id = $1", [task.body.task_id]);
    expect(again.rows[0].n).toBe(1);
  });
});
