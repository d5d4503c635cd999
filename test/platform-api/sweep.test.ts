// The stuck-deployment sweep (platform spec 3.1, 8) as the pg-boss job it runs as: an
// operation active for more than 30 minutes fails with a timeout message, its environment
// goes to error, a log entry says why, and its command still waiting for the agent is
// withdrawn. Younger operations are left alone. The job is scheduled every 5 minutes.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { STUCK_SWEEP_QUEUE } from "../../apps/control-plane/src/modules/deployments/stuck-sweep.ts";
import { JOB_POLICY, deadLetterOf, startJobs } from "../../apps/control-plane/src/db/jobs.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { publicClient } from "../support/http.ts";
import { waitFor } from "../support/wait.ts";

let cp: TestControlPlane;
let demo: DemoOrganization;
const MINUTE = 60_000;

beforeAll(async () => {
  cp = await startControlPlane();
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
});
afterAll(async () => cp?.close());

async function runSweep(): Promise<void> {
  const id = await cp.app.jobs.send(STUCK_SWEEP_QUEUE, {});
  const job = await cp.app.jobs.waitFor(STUCK_SWEEP_QUEUE, id);
  expect(job.state).toBe("completed");
}

describe("stuck-deployment sweep", () => {
  test("is scheduled every 5 minutes on a queue with the job policy", async () => {
    const schedules = await cp.app.jobs.boss.getSchedules();
    expect(schedules.find((s) => s.name === STUCK_SWEEP_QUEUE)).toMatchObject({ cron: "*/5 * * * *" });
    const queue = await cp.app.jobs.boss.getQueue(STUCK_SWEEP_QUEUE);
    expect(queue).toMatchObject({ policy: "standard", expireInSeconds: 600, deadLetter: deadLetterOf(STUCK_SWEEP_QUEUE) });
    expect(await cp.app.jobs.boss.getQueue(deadLetterOf(STUCK_SWEEP_QUEUE))).not.toBeNull();
    expect(JOB_POLICY).toMatchObject({ retryDelaysSeconds: [5, 15, 45], maxDelaySeconds: 300, timeoutSeconds: 600, systemConcurrency: 10 });
    // The production app runs with the production ladder.
    expect(cp.app.jobs.retryDelaysSeconds).toEqual([5, 15, 45]);
  });

  test("fails operations active for more than 30 minutes, withdraws their commands, marks the environment error and logs why", async () => {
    const scope = { organizationId: demo.organization_id, projectId: null };
    const actor = { userId: null, apiKeyId: null };
    const api = publicClient(cp.app, demo.api_keys.org_rw);
    const { pool } = cp.database;

    // A deploy still queued for the agent (its command waits in the outbox) ...
    const queued = await cp.app.services.deployments.requestAction(scope, demo.environments.running, "deploy", actor);
    // ... and one the agent took and started, then went silent.
    const running = await cp.app.services.deployments.requestAction(scope, demo.environments.stopped, "start", actor);
    const took = await pool.query("update agent_commands set state = 'accepted', accepted_at = now() where deployment_id = $1", [running.id]);
    expect(took.rowCount).toBe(1);
    await pool.query("update deployments set status = 'deploying', started_at = $2, current_step = 'starting_container' where id = $1", [running.id, cp.clock.now()]);
    await pool.query("update environments set status = 'deploying' where id = $1", [demo.environments.stopped]);
    expect((await pool.query("select state from agent_commands where deployment_id = $1", [queued.id])).rows).toEqual([{ state: "pending" }]);

    // 29 minutes later nothing is stuck yet.
    cp.clock.advance(29 * MINUTE);
    await runSweep();
    expect((await api.get(`/deployments/${queued.id}`)).body.status).not.toBe("failed");
    expect((await api.get(`/deployments/${running.id}`)).body.status).not.toBe("failed");

    // Past 30 minutes both are.
    cp.clock.advance(2 * MINUTE);
    await runSweep();
    for (const [deploymentId, environmentId] of [
      [queued.id, demo.environments.running],
      [running.id, demo.environments.stopped],
    ] as const) {
      const { rows } = await pool.query("select status, error_message, completed_at from deployments where id = $1", [deploymentId]);
      expect(rows[0]).toMatchObject({ status: "failed", error_message: "Deployment timed out after 30 minutes" });
      expect(rows[0].completed_at).not.toBeNull();
      const task = await api.get(`/deployments/${deploymentId}`);
      expect(task.body.status).toBe("failed");
      expect((await api.get(`/environments/${environmentId}`)).body.status).toBe("error");
      const logs = await pool.query("select level, message from deployment_logs where deployment_id = $1", [deploymentId]);
      expect(logs.rows).toContainEqual({ level: "error", message: "Deployment timed out after 30 minutes" });
    }
    // The command the agent never took is withdrawn; it will not start 30 minutes late.
    expect((await pool.query("select state from agent_commands where deployment_id = $1", [queued.id])).rows).toEqual([{ state: "cancelled" }]);

    // The environment is free again: a new deploy is accepted, and a fresh one is not swept.
    const next = await api.post(`/environments/${demo.environments.running}/deploy`);
    expect(next.status).toBe(202);
    await runSweep();
    expect((await pool.query("select status from deployments where id = $1", [next.body.task_id])).rows[0]?.status).not.toBe("failed");
  });
});

describe("jobs", () => {
  test("the system-wide cap holds across replicas: jobs beyond it wait for a slot, then all run", async () => {
    // Two more "replicas" of the job runner on the same database, each willing to run 5 at once, capped at 2 together.
    const options = { systemConcurrency: 2, concurrency: 5, pollingIntervalSeconds: 0.5 };
    const replicas = [await startJobs({ pool: cp.database.pool, options }), await startJobs({ pool: cp.database.pool, options })];
    let running = 0;
    let most = 0;
    const done: number[] = [];
    try {
      for (const r of replicas) {
        await r.define<{ n: number }>("test.slots", async ({ n }) => {
          running++;
          most = Math.max(most, running);
          await new Promise((res) => setTimeout(res, 300));
          running--;
          done.push(n);
        });
      }
      for (let n = 0; n < 8; n++) await replicas[n % 2]!.send("test.slots", { n });
      await waitFor(async () => done.length === 8, 20_000, 100);
      expect(done.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(most).toBeLessThanOrEqual(2);
    } finally {
      for (const r of replicas) await r.stop();
    }
  });

  test("a job that keeps failing is retried after the configured delays, then dead-lettered", async () => {
    const jobs = await startJobs({ pool: cp.database.pool, options: { retryDelaysSeconds: [0.1, 0.1], pollingIntervalSeconds: 0.5 } });
    const attempts: { attempt: number; lastAttempt: boolean }[] = [];
    try {
      await jobs.define("test.failing", async (_data, ctx) => {
        attempts.push({ attempt: ctx.attempt, lastAttempt: ctx.lastAttempt });
        throw new Error("receiver down");
      });
      await jobs.send("test.failing", { x: 1 });
      await waitFor(async () => (await jobs.boss.getQueueSize(deadLetterOf("test.failing"))) === 1, 20_000, 100);
      expect(attempts).toEqual([
        { attempt: 1, lastAttempt: false },
        { attempt: 2, lastAttempt: false },
        { attempt: 3, lastAttempt: true },
      ]);
    } finally {
      await jobs.stop();
    }
  });
});
