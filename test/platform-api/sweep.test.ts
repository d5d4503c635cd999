// The stuck-deployment sweep (platform spec 3.1, 8) as the pg-boss job it runs as: an
// operation active for more than 30 minutes fails with a timeout message, its environment
// goes to error, a log entry says why, and its command still waiting for the agent is
// withdrawn. Younger operations are left alone. The job is scheduled every 5 minutes.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { STUCK_SWEEP_QUEUE } from "../../apps/control-plane/src/modules/deployments/operations/stuck-sweep.ts";
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
    // pg-boss's own retries: 3, backoff from 5 s doubling up to 300 s, then the dead-letter queue (kept 30 days).
    const queue = await cp.app.jobs.boss.getQueue(STUCK_SWEEP_QUEUE);
    expect(queue).toMatchObject({
      policy: "standard",
      expireInSeconds: 600,
      retryLimit: 3,
      retryDelay: 5,
      retryBackoff: true,
      retryDelayMax: 300,
      deadLetter: deadLetterOf(STUCK_SWEEP_QUEUE),
    });
    expect(await cp.app.jobs.boss.getQueue(deadLetterOf(STUCK_SWEEP_QUEUE))).toMatchObject({ retentionSeconds: 30 * 86_400 });
    expect(JOB_POLICY).toMatchObject({ retryLimit: 3, retryDelaySeconds: 5, maxDelaySeconds: 300, timeoutSeconds: 600, systemConcurrency: 10 });
    // The production app runs with the production policy.
    expect(cp.app.jobs.retryPolicy).toEqual({ retryLimit: 3, retryDelaySeconds: 5, backoff: true, maxDelaySeconds: 300 });
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

  test("a job that keeps failing is tried retryLimit + 1 times, then dead-lettered with its data", async () => {
    const failed: boolean[] = [];
    const jobs = await startJobs({ pool: cp.database.pool, options: { retryLimit: 2, retryDelaySeconds: 0, pollingIntervalSeconds: 0.5 }, onTryFailed: (queue, final) => queue === "test.failing" && failed.push(final) });
    const attempts: { attempt: number; lastAttempt: boolean; x: number }[] = [];
    try {
      await jobs.define<{ x: number }>("test.failing", async ({ x }, ctx) => {
        attempts.push({ attempt: ctx.attempt, lastAttempt: ctx.lastAttempt, x });
        throw new Error("receiver down");
      });
      const id = await jobs.send("test.failing", { x: 1 });
      await waitFor(async () => (await jobs.queueSize(deadLetterOf("test.failing"))) === 1, 20_000, 100);
      expect(attempts).toEqual([
        { attempt: 1, lastAttempt: false, x: 1 },
        { attempt: 2, lastAttempt: false, x: 1 },
        { attempt: 3, lastAttempt: true, x: 1 },
      ]);
      // The metrics see every failed try, the last one as final.
      expect(failed).toEqual([false, false, true]);
      const job = await jobs.waitFor("test.failing", id);
      expect(job).toMatchObject({ state: "failed", retryCount: 2, output: { message: "receiver down" } });
      // The dead-letter copy keeps the payload, waiting for an operator.
      const [dead] = await jobs.boss.findJobs<{ x: number }>(deadLetterOf("test.failing"));
      expect(dead).toMatchObject({ data: { x: 1 }, state: "created" });
      expect(await jobs.queueSize("test.failing")).toBe(0);
    } finally {
      await jobs.stop();
    }
  });

  test("a retry waits for its backoff delay, and a job that succeeds on a retry is not dead-lettered", async () => {
    const jobs = await startJobs({ pool: cp.database.pool, options: { retryLimit: 3, retryDelaySeconds: 1, pollingIntervalSeconds: 0.5 } });
    const tries: number[] = [];
    try {
      await jobs.define("test.flaky", async () => {
        tries.push(Date.now());
        if (tries.length < 3) throw new Error("not yet");
      });
      const id = await jobs.send("test.flaky", {});
      await waitFor(async () => tries.length === 1, 10_000, 50);
      // Waiting for its retry: counted in the queue's depth, due 1 to 2 s after the failure (base 1 s, doubled with jitter).
      await waitFor(async () => (await jobs.boss.getJobById("test.flaky", id))?.state === "retry", 5_000, 50);
      const waiting = await jobs.boss.getJobById("test.flaky", id);
      const due = waiting!.startAfter.getTime() - tries[0]!;
      expect(due).toBeGreaterThanOrEqual(900);
      expect(due).toBeLessThanOrEqual(2_500);
      expect(await jobs.queueSize("test.flaky")).toBe(1);
      const job = await jobs.waitFor("test.flaky", id, 20_000);
      expect(job.state).toBe("completed");
      expect(tries).toHaveLength(3);
      // Second retry: 2 to 4 s after the second failure.
      expect(tries[1]! - tries[0]!).toBeGreaterThanOrEqual(900);
      expect(tries[2]! - tries[1]!).toBeGreaterThanOrEqual(1_900);
      expect(await jobs.queueSize(deadLetterOf("test.flaky"))).toBe(0);
    } finally {
      await jobs.stop();
    }
  });
});
