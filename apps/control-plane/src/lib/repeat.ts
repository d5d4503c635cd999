// A background loop that never overlaps itself: each run schedules the next one when it
// ends, so a slow run (a busy database) delays the next instead of piling runs up. Every
// periodic task in the control plane runs through this (no setInterval).
export interface Repeating {
  /** Runs the task now, outside the schedule (tests use it instead of waiting). */
  runNow(): Promise<void>;
  stop(): void;
}

export function repeat(task: () => Promise<unknown> | unknown, opts: { everyMs: number; onError?: (err: unknown) => void; unref?: boolean }): Repeating {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  const runOnce = async () => {
    await task();
  };

  function schedule() {
    if (stopped) return;
    timer = setTimeout(() => {
      runOnce()
        .catch((err) => opts.onError?.(err))
        .finally(schedule);
    }, opts.everyMs);
    if (opts.unref !== false) timer.unref();
  }
  schedule();

  return {
    runNow: runOnce,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
