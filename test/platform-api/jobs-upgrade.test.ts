// A database whose jobs were queued by pg-boss 10 (the release before 12, schema version 24,
// which pg-boss 12 cannot migrate: pg-boss 11 changed the schema without a migration). The
// jobs module sets the old schema aside, pg-boss 12 creates its own, and each queue's
// waiting jobs move over when the queue is defined again: a job queued before the upgrade
// still runs after it, with its payload, and one due later still waits until it is due.
import { afterAll, beforeAll, expect, test } from "vitest";
import PgBossV10 from "pg-boss-v10";
import { createDb, type DbHandle } from "@berth/db";
import { deadLetterOf, startJobs } from "../../apps/control-plane/src/db/jobs.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { waitFor } from "../support/wait.ts";

let testDb: TestDatabase;
let database: DbHandle;
const QUEUE = "test.upgrade";

beforeAll(async () => {
  testDb = await createTestDatabase();
  database = createDb(testDb.url);
  // What pg-boss 10 left behind, as the previous release's db/jobs.ts wrote it: a queue with its
  // dead-letter queue, jobs in the { payload, attempt } envelope of the hand-written ladder.
  const old = new PgBossV10({ connectionString: testDb.url, schema: "pgboss" });
  old.on("error", () => {});
  await old.start();
  await old.createQueue(deadLetterOf(QUEUE), { name: deadLetterOf(QUEUE), policy: "standard", retentionDays: 30 });
  await old.createQueue(QUEUE, { name: QUEUE, policy: "standard", retryLimit: 0, expireInSeconds: 600, deadLetter: deadLetterOf(QUEUE) });
  await old.send(QUEUE, { payload: { n: 1 }, attempt: 1 });
  await old.send(QUEUE, { payload: { n: 2 }, attempt: 2 }, { startAfter: 3600 });
  await old.send(deadLetterOf(QUEUE), { payload: { n: 3 }, attempt: 4 });
  await old.stop({ graceful: false, wait: true });
}, 60_000);

afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

test("jobs queued by pg-boss 10 survive the upgrade to pg-boss 12", async () => {
  const version = async (schema: string) => (await database.pool.query<{ version: number }>(`select version from ${schema}.version`)).rows[0]?.version;
  expect(await version("pgboss")).toBe(24);

  const seen: number[] = [];
  const jobs = await startJobs({ pool: database.pool, options: { retryLimit: 0, pollingIntervalSeconds: 0.5 } });
  try {
    await jobs.define<{ n: number }>(QUEUE, async ({ n }) => {
      seen.push(n);
    });
    // pg-boss 12's schema in place of the old one, which is kept aside.
    expect(await version("pgboss")).toBeGreaterThanOrEqual(46);
    expect(await version("pgboss_v10")).toBe(24);

    // The job that was due runs, with its payload out of the old envelope.
    await waitFor(async () => seen.length === 1, 20_000, 100);
    expect(seen).toEqual([1]);
    // The one due in an hour still waits, and the dead-lettered one is still in the dead-letter queue.
    expect(await jobs.queueSize(QUEUE)).toBe(1);
    const [later] = await jobs.boss.findJobs<{ n: number }>(QUEUE, { data: { n: 2 } });
    expect(later?.startAfter.getTime()).toBeGreaterThan(Date.now() + 3000_000);
    const dead = await jobs.boss.findJobs<{ n: number }>(deadLetterOf(QUEUE));
    expect(dead.map((j) => j.data)).toEqual([{ n: 3 }]);
    // Moved, not copied: nothing waits in the old schema any more.
    const left = await database.pool.query("select count(*)::int as n from pgboss_v10.job where name like 'test.upgrade%' and state in ('created', 'retry')");
    expect(left.rows[0].n).toBe(0);
  } finally {
    await jobs.stop();
  }

  // A restart (or a second replica) finds the schema already upgraded and moves nothing twice.
  const again = await startJobs({ pool: database.pool, options: { retryLimit: 0, pollingIntervalSeconds: 0.5 } });
  try {
    await again.define<{ n: number }>(QUEUE, async ({ n }) => {
      seen.push(n);
    });
    expect(await again.queueSize(QUEUE)).toBe(1);
    expect(await again.queueSize(deadLetterOf(QUEUE))).toBe(1);
    expect(seen).toEqual([1]);
  } finally {
    await again.stop();
  }
});
