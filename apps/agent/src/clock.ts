// Time enters the agent through this interface, so tests can hand in a controlled one.

export type TimerHandle = ReturnType<typeof setTimeout>;

export interface Clock {
  now(): Date;
  setTimeout(callback: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle),
};

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
