// What /readyz asks of its dependencies: the database answers a trivial query, and the job
// queue (pg-boss, in the same database) is running and answers its queue-size query. Each
// check resolves with null when healthy, else with the reason; none waits longer than
// `timeoutMs` (a query left running then finishes or fails on its own).
import type pg from "pg";
import type { Jobs } from "./jobs.ts";

export type CheckResult = string | null;

function within<T>(ms: number, what: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([what, late]).finally(() => clearTimeout(timer));
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err)) || "failed";

export async function checkDatabase(pool: pg.Pool, timeoutMs: number): Promise<CheckResult> {
  try {
    await within(timeoutMs, pool.query("select 1"));
    return null;
  } catch (err) {
    return reasonOf(err);
  }
}

export async function checkJobs(jobs: Pick<Jobs, "running" | "queueSize">, queue: string, timeoutMs: number): Promise<CheckResult> {
  if (!jobs.running()) return "the job queue is not running";
  try {
    await within(timeoutMs, jobs.queueSize(queue));
    return null;
  } catch (err) {
    return reasonOf(err);
  }
}
