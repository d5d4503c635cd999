// Background jobs on pg-boss (ARCHITECTURE "State and jobs", platform spec 8), in the same
// database as everything else (pg-boss keeps its tables in the schema `pgboss`) and over
// the app's own pool, so a job can be enqueued inside the transaction that made it necessary.
//
// Policy of every queue:
// - FIFO: standard policy, no priorities; workers fetch the oldest job first.
// - Retries: pg-boss's own, set on the queue: 3 retries with exponential backoff from 5 s,
//   at most 300 s (retryDelay 5, retryBackoff, retryDelayMax 300). pg-boss doubles the delay
//   per retry with jitter: 5-10 s, 10-20 s, 20-40 s. After the last failure (or a try that
//   overran the timeout) pg-boss fails the job and copies it to the queue's dead-letter queue
//   (`<name>.dead`, kept 30 days).
// - Job timeout 600 s (`expireInSeconds`): pg-boss stops waiting for the handler and fails
//   the try (retried like any failure, then dead-lettered).
// - At most 10 jobs run at once system-wide, whatever the number of replicas: pg-boss limits
//   per process only, so each job first takes one of 10 slots, a session-level advisory lock
//   (pg_try_advisory_lock(BERTH_JOB_SLOTS, 0..9)) held on a connection of a small pool of its
//   own (never the app's pool, so jobs cannot starve the API) for the length of the job. A
//   job that finds no free slot waits and tries again. A replica that dies releases its
//   slots with its connections.
//
// Upgrade from pg-boss 10: pg-boss 11 changed its schema without a migration from 10's
// (schema version 24), and pg-boss 12 migrates from 11's only. On start, a `pgboss` schema
// left by pg-boss 10 is renamed `pgboss_v10` and pg-boss creates a new one; as each queue is
// defined again, its waiting jobs (and its dead-letter queue's) move from the old schema to
// the new one. Cron schedules are set again by the code that owns them. The old schema is
// left in place (with its finished jobs) for an operator to drop.
import pg from "pg";
import { PgBoss, type Db, type JobResult, type JobWithMetadata, type Queue } from "pg-boss";
import { survivePgRestarts } from "@berth/db";

/** How long a plain close (not a drain with its deadline) lets running jobs finish. */
export const JOB_STOP_GRACE_MS = 10_000;

export const JOB_POLICY = {
  /** Retries after the first try. */
  retryLimit: 3,
  /** Delay before the first retry; doubled (with jitter) for each further one. */
  retryDelaySeconds: 5,
  maxDelaySeconds: 300,
  timeoutSeconds: 600,
  systemConcurrency: 10,
  deadLetterRetentionDays: 30,
} as const;

export interface JobsOptions {
  /** Retries after the first try (default 3). */
  retryLimit?: number;
  /**
   * Delay before the first retry, in whole seconds, doubled for each further retry up to
   * JOB_POLICY.maxDelaySeconds (default 5). 0: a failed try is tried again at once, without
   * backoff. Tests shorten it.
   */
  retryDelaySeconds?: number;
  /** How often an idle worker polls for jobs (pg-boss minimum 0.5 s). */
  pollingIntervalSeconds?: number;
  /** Jobs of one queue fetched and run together by this replica. */
  concurrency?: number;
  /** Jobs running at once across all replicas. */
  systemConcurrency?: number;
  /** How often pg-boss looks for due cron schedules (default 30 s). */
  cronMonitorIntervalSeconds?: number;
}

export interface JobContext {
  jobId: string;
  /** 1 for the first try. */
  attempt: number;
  /** No retry follows if this try fails. */
  lastAttempt: boolean;
}

export type JobHandler<T> = (data: T, ctx: JobContext) => Promise<unknown>;

/** Something that runs SQL: the app's pool, or a client inside a transaction. */
export type SqlRunner = Pick<pg.PoolClient, "query">;

const SLOT_LOCK_CLASS = 0x62657274; // "bert"
const SCHEMA = "pgboss";
const V10_SCHEMA = "pgboss_v10";
/** pg-boss 11's schema version, the oldest pg-boss 12 migrates from. */
const FIRST_V11_SCHEMA_VERSION = 25;

export const deadLetterOf = (name: string) => `${name}.dead`;

/**
 * A `pgboss` schema written by pg-boss 10 (version below 11's) is renamed out of the way, once,
 * whichever replica gets there first; pg-boss then creates its own. True when the old schema
 * exists (renamed now or earlier) and may still hold waiting jobs.
 */
async function setAsidePgBoss10Schema(pool: pg.Pool): Promise<boolean> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    await client.query("select pg_advisory_xact_lock($1, -1)", [SLOT_LOCK_CLASS]);
    const { rows } = await client.query<{ current: string | null; old: string | null }>(
      "select to_regclass($1)::text as current, to_regclass($2)::text as old",
      [`${SCHEMA}.version`, `${V10_SCHEMA}.job`],
    );
    let setAside = rows[0]?.old != null;
    if (rows[0]?.current != null) {
      const version = await client.query<{ version: number }>(`select version from ${SCHEMA}.version`);
      const v = version.rows[0]?.version;
      if (v !== undefined && v < FIRST_V11_SCHEMA_VERSION) {
        if (setAside) throw new Error(`pg-boss 10's schema is in both ${SCHEMA} and ${V10_SCHEMA}: drop one of them`);
        await client.query(`alter schema ${SCHEMA} rename to ${V10_SCHEMA}`);
        setAside = true;
      }
    }
    await client.query("commit");
    return setAside;
  } catch (err) {
    await client.query("rollback").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** A v10 job's data was { payload, attempt } (the hand-written retry ladder's envelope). */
function payloadOfV10(data: unknown): object {
  if (typeof data === "object" && data !== null && "payload" in data && typeof data.payload === "object" && data.payload !== null) return data.payload;
  return (data ?? {}) as object;
}

export async function startJobs(deps: {
  pool: pg.Pool;
  options?: JobsOptions;
  onError?: (err: unknown) => void;
  /** A try of a job failed; `final`: no retry follows (it goes to the dead-letter queue). For metrics. */
  onTryFailed?: (queue: string, final: boolean) => void;
}) {
  const opts = deps.options ?? {};
  const retryLimit = opts.retryLimit ?? JOB_POLICY.retryLimit;
  const retryDelay = opts.retryDelaySeconds ?? JOB_POLICY.retryDelaySeconds;
  if (!Number.isInteger(retryLimit) || retryLimit < 0) throw new Error(`jobs: retryLimit must be a whole number >= 0, not ${retryLimit}`);
  if (!Number.isInteger(retryDelay) || retryDelay < 0) throw new Error(`jobs: retryDelaySeconds must be a whole number >= 0, not ${retryDelay}`);
  const concurrency = opts.concurrency ?? JOB_POLICY.systemConcurrency;
  const slots = opts.systemConcurrency ?? JOB_POLICY.systemConcurrency;
  const polling = opts.pollingIntervalSeconds ?? 2;
  const asDb = (runner: SqlRunner): Db => ({
    executeSql: async (text: string, values?: unknown[]) => runner.query(text, values),
  });

  const v10Left = await setAsidePgBoss10Schema(deps.pool);
  const boss = new PgBoss({
    db: asDb(deps.pool),
    schema: SCHEMA,
    ...(opts.cronMonitorIntervalSeconds ? { cronMonitorIntervalSeconds: opts.cronMonitorIntervalSeconds } : {}),
  });
  boss.on("error", (err) => deps.onError?.(err));
  await boss.start();
  let running = true;

  // Slot connections: one per running job of this replica, never more than the system-wide cap.
  // A slot's client stays checked out for the whole job: a PostgreSQL restart meanwhile must not crash the replica.
  const slotPool = survivePgRestarts(new pg.Pool({ ...(deps.pool as unknown as { options: pg.PoolConfig }).options, max: slots }));
  let stopping = false;

  async function withSlot<R>(fn: () => Promise<R>): Promise<R> {
    for (;;) {
      const client = await slotPool.connect();
      let slot = -1;
      try {
        for (let s = 0; s < slots && slot < 0; s++) {
          const { rows } = await client.query<{ ok: boolean }>("select pg_try_advisory_lock($1, $2) as ok", [SLOT_LOCK_CLASS, s]);
          if (rows[0]?.ok) slot = s;
        }
      } catch (err) {
        client.release(err as Error);
        throw err;
      }
      if (slot < 0) {
        client.release();
        if (stopping) throw new Error("jobs are stopping");
        await new Promise((r) => setTimeout(r, 250 + Math.random() * 250));
        continue;
      }
      try {
        return await fn();
      } finally {
        await client.query("select pg_advisory_unlock($1, $2)", [SLOT_LOCK_CLASS, slot]).then(
          () => client.release(),
          (err: Error) => client.release(err),
        );
      }
    }
  }

  // The retry policy, on the queue: every job sent to it takes these at insert time.
  // pg-boss takes retryDelayMax only with backoff (and clears it with null).
  const backoff = retryDelay > 0;
  const retryPolicy = { retryLimit, retryDelay, retryBackoff: backoff, expireInSeconds: JOB_POLICY.timeoutSeconds } satisfies Omit<Queue, "name">;
  const workers: string[] = [];
  /** The queues defined on this replica and their dead-letter queues. */
  const queues: string[] = [];

  /** Moves the waiting jobs of a queue from pg-boss 10's schema into pg-boss's queue, in one transaction. */
  async function carryOverV10Jobs(name: string): Promise<void> {
    const client = await deps.pool.connect();
    try {
      await client.query("begin");
      const { rows } = await client.query<{ data: unknown; start_after: Date; singleton_key: string | null }>(
        `delete from ${V10_SCHEMA}.job where name = $1 and state in ('created', 'retry') returning data, start_after, singleton_key`,
        [name],
      );
      for (const row of rows) {
        await boss.send(name, payloadOfV10(row.data), { db: asDb(client), startAfter: row.start_after, ...(row.singleton_key ? { singletonKey: row.singleton_key } : {}) });
      }
      await client.query("commit");
    } catch (err) {
      await client.query("rollback").catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  async function send<T extends object>(name: string, payload: T, o: { db?: SqlRunner; startAfterSeconds?: number } = {}) {
    const id = await boss.send(name, payload, {
      ...(o.db ? { db: asDb(o.db) } : {}),
      ...(o.startAfterSeconds ? { startAfter: o.startAfterSeconds } : {}),
    });
    if (!id) throw new Error(`job of ${name} was not queued`);
    // Wakes this replica's worker now instead of at its next poll (no effect inside a
    // transaction that has not committed yet: the worker then finds the job at its next poll).
    if (!o.db) for (const w of workers) boss.notifyWorker(w);
    return id;
  }

  return {
    boss,
    /** The retry policy of the queues this replica defines. */
    retryPolicy: { retryLimit, retryDelaySeconds: retryDelay, backoff, maxDelaySeconds: JOB_POLICY.maxDelaySeconds } as const,

    /**
     * Creates the queue and its dead-letter queue, or sets their policy if they exist (so a
     * changed policy reaches queues made by an earlier release), and runs its jobs on this replica.
     */
    async define<T extends object>(name: string, handler: JobHandler<T>): Promise<void> {
      const dead = deadLetterOf(name);
      const deadPolicy = { retryLimit: 0, retentionSeconds: JOB_POLICY.deadLetterRetentionDays * 86_400 };
      await boss.createQueue(dead, { policy: "standard", ...deadPolicy });
      await boss.updateQueue(dead, deadPolicy);
      await boss.createQueue(name, { policy: "standard", ...retryPolicy, ...(backoff ? { retryDelayMax: JOB_POLICY.maxDelaySeconds } : {}), deadLetter: dead });
      await boss.updateQueue(name, { ...retryPolicy, retryDelayMax: backoff ? JOB_POLICY.maxDelaySeconds : null, deadLetter: dead });
      if (v10Left) {
        for (const q of [name, dead]) await carryOverV10Jobs(q).catch((err: unknown) => deps.onError?.(err));
      }
      queues.push(name, dead);
      const worker = await boss.work(name, { batchSize: concurrency, pollingIntervalSeconds: polling, includeMetadata: true, perJobResults: true }, async (jobs: JobWithMetadata<T>[]) =>
        // Each job settles on its own: one job's failure must not fail the others of the batch.
        Promise.all(
          jobs.map(async (job): Promise<JobResult> => {
            const lastAttempt = job.retryCount >= job.retryLimit;
            try {
              await withSlot(() => handler(job.data, { jobId: job.id, attempt: job.retryCount + 1, lastAttempt }));
              return { id: job.id, status: "completed" };
            } catch (err) {
              deps.onTryFailed?.(name, lastAttempt);
              // Failed: pg-boss retries it after its backoff, or after the last try moves it to the dead-letter queue.
              return { id: job.id, status: "failed", output: { message: err instanceof Error ? err.message : String(err) } };
            }
          }),
        ),
      );
      workers.push(worker);
    },

    send,

    /** Wakes this replica's workers (after a transaction that queued jobs has committed). */
    wake(): void {
      for (const w of workers) boss.notifyWorker(w);
    },

    /** A cron schedule (pg-boss timekeeper; one job per due time across all replicas). */
    async schedule(name: string, cron: string, data: object = {}): Promise<void> {
      await boss.schedule(name, cron, data);
    },

    /** Waits until a job has finished (completed or failed for good); for tests and scripts. */
    async waitFor(name: string, id: string, timeoutMs = 20_000): Promise<JobWithMetadata<unknown>> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const job = await boss.getJobById<unknown>(name, id);
        if (job && (job.state === "completed" || job.state === "failed" || job.state === "cancelled")) return job;
        if (Date.now() > until) throw new Error(`job ${name}/${id} still ${job?.state ?? "missing"} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },

    /** Started and not stopped (pg-boss keeps its own state private). */
    running: () => running,

    /** The queues this replica defined, dead-letter queues included. */
    queueNames: (): readonly string[] => queues,

    /**
     * Jobs waiting in a queue (created, or failed and waiting for their retry), counted now:
     * pg-boss 12's own queue counts are a cache refreshed every minute.
     */
    async queueSize(name: string): Promise<number> {
      const { rows } = await deps.pool.query<{ n: number }>(`select count(*)::int as n from ${SCHEMA}.job where name = $1 and state < 'active'`, [name]);
      return rows[0]?.n ?? 0;
    },

    /**
     * Stops taking jobs and waits up to `graceMs` for the running ones; pg-boss then fails
     * those still running, and another replica retries them after the retry delay (not after
     * the 600 s timeout). A handler still running keeps its slot's connection until it ends:
     * the stop does not wait for it.
     */
    async stop(graceMs: number = JOB_STOP_GRACE_MS): Promise<void> {
      stopping = true;
      running = false;
      await boss.stop({ graceful: true, timeout: graceMs, close: false });
      // end() waits for every checked-out connection: a slot still held by a running handler.
      const slotsHeld = slotPool.totalCount - slotPool.idleCount;
      const ended = slotPool.end();
      if (slotsHeld === 0) await ended;
      else void ended.catch(() => {});
    },
  };
}
export type Jobs = Awaited<ReturnType<typeof startJobs>>;
