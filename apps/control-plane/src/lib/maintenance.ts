// Housekeeping of expired rate-limit windows and idempotency records. Each run schedules
// the next one when it ends, so runs never overlap.
import type pg from "pg";
import type { Clock } from "./clock.ts";

export function startMaintenance(deps: {
  pool: pg.Pool;
  clock: Clock;
  /** Further periodic work (dispatch repair, task timeouts), run after the housekeeping. */
  tasks?: (() => Promise<unknown>)[];
  everyMs?: number;
  onError?: (err: unknown) => void;
}) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const every = deps.everyMs ?? 60_000;

  async function runOnce(): Promise<void> {
    const now = deps.clock.now();
    const oldWindow = Math.floor(now.getTime() / 1000) - 2 * 60;
    await deps.pool.query("delete from rate_limit_counters where window_start < $1", [oldWindow]);
    await deps.pool.query("delete from idempotency_records where expires_at < $1", [now]);
    for (const task of deps.tasks ?? []) await task();
  }

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((err) => deps.onError?.(err))
        .finally(schedule);
    }, every);
    timer.unref();
  }
  schedule();

  return {
    /** Runs every task now (tests use it instead of waiting a minute). */
    runOnce,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
export type Maintenance = ReturnType<typeof startMaintenance>;
