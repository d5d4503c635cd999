// Housekeeping of expired idempotency records, then the periodic tasks the app gives it
// (rate-limit windows, dispatch repair, task timeouts). Runs never overlap (lib/repeat.ts).
import type pg from "pg";
import type { Clock } from "./clock.ts";
import { repeat } from "./repeat.ts";

export function startMaintenance(deps: {
  pool: pg.Pool;
  clock: Clock;
  /** Further periodic work, run after the housekeeping. */
  tasks?: (() => Promise<unknown>)[];
  everyMs?: number;
  onError?: (err: unknown) => void;
}) {
  async function runOnce(): Promise<void> {
    const now = deps.clock.now();
    await deps.pool.query("delete from idempotency_records where expires_at < $1", [now]);
    for (const task of deps.tasks ?? []) await task();
  }
  const loop = repeat(runOnce, { everyMs: deps.everyMs ?? 60_000, onError: deps.onError });

  return {
    /** Runs every task now (tests use it instead of waiting a minute). */
    runOnce,
    stop: () => loop.stop(),
  };
}
export type Maintenance = ReturnType<typeof startMaintenance>;
