// The minute-by-minute housekeeping: the periodic tasks the app gives it (expired rate-limit
// windows and idempotency records, dispatch repair, task timeouts, event retention), one
// after the other. Runs never overlap (lib/repeat.ts).
import { repeat } from "./repeat.ts";

export function startMaintenance(deps: { tasks: (() => Promise<unknown>)[]; everyMs?: number; onError?: (err: unknown) => void }) {
  async function runOnce(): Promise<void> {
    for (const task of deps.tasks) await task();
  }
  const loop = repeat(runOnce, { everyMs: deps.everyMs ?? 60_000, onError: deps.onError });

  return {
    /** Runs every task now (tests use it instead of waiting a minute). */
    runOnce,
    stop: () => loop.stop(),
  };
}
export type Maintenance = ReturnType<typeof startMaintenance>;
