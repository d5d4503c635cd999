// A drain and the background jobs still running when it closes the app: they get what is left
// of BERTH_DRAIN_TIMEOUT_MS (lifecycle/drain-state.ts), then pg-boss fails them and another
// replica retries them after the retry delay. With a fixed 10 s grace, a drain with less time
// left than that ran past its deadline (exit 1), and a job it left active waited for its 600 s
// timeout before anyone retried it.
import { afterAll, beforeAll, expect, it } from "vitest";
import { drainReplica } from "../../apps/control-plane/src/lifecycle/drain.ts";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { waitUntil } from "../support/wait.ts";

const QUEUE = "test-drain-long-job";
let cp: TestControlPlane;
let finish: () => void = () => {};
const stillRunning = new Promise<void>((resolve) => (finish = resolve));

beforeAll(async () => {
  cp = await startControlPlane();
  // A replica that drains has been serving, and listening made it ready. Unready, close()
  // would first compile every route's schemas inside the drain's budget: 1 s on an idle
  // machine, 3.6-4.6 s with the cores busy (a CI run failed on it at 5,176 ms).
  await cp.app.ready();
}, 60_000);
afterAll(async () => {
  finish();
  await cp?.stop();
});

const stateOf = async (id: string) =>
  (await cp.database.pool.query<{ state: string; output: unknown }>("select state, output from pgboss.job where name = $1 and id = $2", [QUEUE, id])).rows[0];

it("fails a job still running shortly before the drain's deadline, so the drain ends in time and the job is retried", async () => {
  await cp.app.jobs.define(QUEUE, () => stillRunning);
  const id = await cp.app.jobs.send(QUEUE, {});
  await waitUntil("the job to be active", async () => (await stateOf(id))?.state === "active", { timeoutMs: 20_000, intervalMs: 100 });

  const timeoutMs = 5_000;
  const started = Date.now();
  await drainReplica({ app: cp.app, settings: { settleMs: 0, handoverMs: 0, timeoutMs }, log: () => {}, release: async () => {} });
  const took = Date.now() - started;

  expect(took).toBeLessThan(timeoutMs);
  // Failed by the stop, with its retries left: waiting for its retry delay, not active until its timeout.
  expect(await stateOf(id)).toMatchObject({ state: "retry" });
}, 60_000);
