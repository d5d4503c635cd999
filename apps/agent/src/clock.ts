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

/** Past this, a clock is too wrong to correct: its commands are judged by it as it is. */
export const MAX_CLOCK_CORRECTION_MS = 24 * 3_600_000;

/**
 * The control plane's time as this server knows it: the local clock corrected by the offset
 * read at the last handshake (the challenge's server_time). Commands carry the control
 * plane's timestamps, so their validity is judged by this, and a server whose clock is wrong
 * (no NTP, a dead RTC battery, a VM restored from a snapshot) still takes its commands.
 * Replays stay refused by command id and seq whatever the clock says; the expiry is their
 * third fence, and an offset past MAX_CLOCK_CORRECTION_MS is not applied.
 */
export interface ControlPlaneTime {
  now(): Date;
  /** Records the control plane's time as just read; returns the local clock's offset from it (ms). */
  observe(controlPlaneNow: Date): number;
}

export function createControlPlaneTime(clock: Pick<Clock, "now">): ControlPlaneTime {
  let offsetMs = 0;
  return {
    now: () => new Date(clock.now().getTime() + offsetMs),
    observe(controlPlaneNow) {
      const measured = controlPlaneNow.getTime() - clock.now().getTime();
      offsetMs = Number.isFinite(measured) && Math.abs(measured) <= MAX_CLOCK_CORRECTION_MS ? measured : 0;
      return measured;
    },
  };
}

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
