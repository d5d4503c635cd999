// Background jobs on pg-boss (ARCHITECTURE "State and jobs", platform spec 8), in the same
// database as everything else (pg-boss keeps its tables in the schema `pgboss`) and over
// the app's own pool, so a job can be enqueued inside the transaction that made it necessary.
//
// Policy of every queue:
// - FIFO: standard policy, no priorities; workers fetch the oldest job first.
// - Retries: a failed try is tried again after 5 s, 15 s, 45 s (base 5 s, factor 3, at most
//   300 s); after the last failure the job goes to the queue's dead-letter queue
//   (`<name>.dead`, kept 30 days). pg-boss's own backoff is 2^n with jitter and no cap, so
//   the ladder is ours: each retry is a new job of the same queue with `startAfter` set to
//   the delay and `attempt` in its data; the queue itself has retryLimit 0, so the job that
//   fails its last try (or overruns the timeout) is failed by pg-boss and dead-lettered.
// - Job timeout 600 s (`expireInSeconds`): pg-boss stops waiting for the handler and fails
//   the job (then dead-lettered).
// - At most 10 jobs run at once system-wide, whatever the number of replicas: pg-boss limits
//   per process only, so each job first takes one of 10 slots, a session-level advisory lock
//   (pg_try_advisory_lock(BERTH_JOB_SLOTS, 0..9)) held on a connection of a small pool of its
//   own (never the app's pool, so jobs cannot starve the API) for the length of the job. A
//   job that finds no free slot waits and tries again. A replica that dies releases its
//   slots with its connections.
import pg from "pg";
import PgBoss from "pg-boss";

/** Delay before retry n (0-based): 5 s × 3^n, at most 300 s. */
export function retryDelaySeconds(retry: number, base = 5, factor = 3, max = 300): number {
  return Math.min(max, base * factor ** retry);
}

export const JOB_POLICY = {
  /** Delays before the 2nd, 3rd and 4th try: 5 s, 15 s, 45 s. */
  retryDelaysSeconds: [0, 1, 2].map((n) => retryDelaySeconds(n)),
  maxDelaySeconds: 300,
  timeoutSeconds: 600,
  systemConcurrency: 10,
  deadLetterRetentionDays: 30,
} as const;

export interface JobsOptions {
  /** Delays before each retry; the number of entries is the number of retries. Tests shorten them. */
  retryDelaysSeconds?: readonly number[];
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

interface Envelope<T> {
  payload: T;
  attempt: number;
}

/** Something that runs SQL: the app's pool, or a client inside a transaction. */
export type SqlRunner = Pick<pg.PoolClient, "query">;

const SLOT_LOCK_CLASS = 0x62657274; // "bert"

export const deadLetterOf = (name: string) => `${name}.dead`;

export async function startJobs(deps: {
  pool: pg.Pool;
  options?: JobsOptions;
  onError?: (err: unknown) => void;
  /** A try of a job failed; `final`: no retry follows (it goes to the dead-letter queue). For metrics. */
  onTryFailed?: (queue: string, final: boolean) => void;
}) {
  const opts = deps.options ?? {};
  const delays = [...(opts.retryDelaysSeconds ?? JOB_POLICY.retryDelaysSeconds)];
  const concurrency = opts.concurrency ?? JOB_POLICY.systemConcurrency;
  const slots = opts.systemConcurrency ?? JOB_POLICY.systemConcurrency;
  const polling = opts.pollingIntervalSeconds ?? 2;
  const asDb = (runner: SqlRunner): PgBoss.Db => ({
    executeSql: async (text: string, values: unknown[]) => runner.query(text, values),
  });

  const boss = new PgBoss({
    db: asDb(deps.pool),
    schema: "pgboss",
    ...(opts.cronMonitorIntervalSeconds ? { cronMonitorIntervalSeconds: opts.cronMonitorIntervalSeconds } : {}),
  });
  boss.on("error", (err) => deps.onError?.(err));
  await boss.start();
  let running = true;

  // Slot connections: one per running job of this replica, never more than the system-wide cap.
  const slotPool = new pg.Pool({ ...(deps.pool as unknown as { options: pg.PoolConfig }).options, max: slots });
  slotPool.on("error", () => {});
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

  const queueOptions = (name: string): PgBoss.Queue => ({
    name,
    policy: "standard",
    retryLimit: 0,
    expireInSeconds: JOB_POLICY.timeoutSeconds,
    deadLetter: deadLetterOf(name),
  });
  const workers: string[] = [];
  /** The queues defined on this replica and their dead-letter queues. */
  const queues: string[] = [];

  async function send<T extends object>(name: string, payload: T, o: { db?: SqlRunner; startAfterSeconds?: number; attempt?: number } = {}) {
    const envelope: Envelope<T> = { payload, attempt: o.attempt ?? 1 };
    const id = await boss.send(name, envelope, {
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
    retryDelaysSeconds: delays as readonly number[],

    /** Creates the queue and its dead-letter queue (idempotent) and runs its jobs on this replica. */
    async define<T extends object>(name: string, handler: JobHandler<T>): Promise<void> {
      await boss.createQueue(deadLetterOf(name), { name: deadLetterOf(name), policy: "standard", retentionDays: JOB_POLICY.deadLetterRetentionDays });
      await boss.createQueue(name, queueOptions(name));
      queues.push(name, deadLetterOf(name));
      const worker = await boss.work<Envelope<T>>(name, { batchSize: concurrency, pollingIntervalSeconds: polling }, async (jobs) => {
        await Promise.all(
          jobs.map(async (job) => {
            const attempt = job.data.attempt ?? 1;
            const lastAttempt = attempt > delays.length;
            // Never throws: pg-boss settles a whole batch at once, and one job's failure must not fail the others.
            try {
              await withSlot(() => handler(job.data.payload, { jobId: job.id, attempt, lastAttempt }));
            } catch (err) {
              const message = err instanceof Error ? err.message : String(err);
              deps.onTryFailed?.(name, lastAttempt);
              try {
                if (!lastAttempt) {
                  await send(name, job.data.payload, { attempt: attempt + 1, startAfterSeconds: delays[attempt - 1] ?? 0 });
                  return; // this try is over; the next one is queued
                }
              } catch (sendErr) {
                deps.onError?.(sendErr);
              }
              // The last try failed (or the retry could not be queued): fail it in pg-boss,
              // which moves it to the dead-letter queue.
              await boss.fail(name, job.id, { message, attempt }).catch((failErr: unknown) => deps.onError?.(failErr));
            }
          }),
        );
      });
      workers.push(worker);
    },

    send,

    /** Wakes this replica's workers (after a transaction that queued jobs has committed). */
    wake(): void {
      for (const w of workers) boss.notifyWorker(w);
    },

    /** A cron schedule (pg-boss timekeeper; one job per due time across all replicas). */
    async schedule(name: string, cron: string, data: object = {}): Promise<void> {
      await boss.schedule(name, cron, { payload: data, attempt: 1 });
    },

    /** Waits until a job has finished (completed or failed); for tests and scripts. */
    async waitFor(name: string, id: string, timeoutMs = 20_000): Promise<PgBoss.JobWithMetadata<unknown>> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const job = await boss.getJobById(name, id, { includeArchive: true });
        if (job && (job.state === "completed" || job.state === "failed" || job.state === "cancelled")) return job;
        if (Date.now() > until) throw new Error(`job ${name}/${id} still ${job?.state ?? "missing"} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },

    /** Started and not stopped (pg-boss keeps its own state private). */
    running: () => running,

    /** The queues this replica defined, dead-letter queues included. */
    queueNames: (): readonly string[] => queues,

    /** Jobs waiting in a queue (pg-boss's queue-size query). */
    queueSize: (name: string): Promise<number> => boss.getQueueSize(name),

    async stop(): Promise<void> {
      stopping = true;
      running = false;
      await boss.stop({ graceful: true, wait: true, timeout: 10_000, close: false });
      await slotPool.end();
    },
  };
}
export type Jobs = Awaited<ReturnType<typeof startJobs>>;
