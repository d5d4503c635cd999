// Time enters through this interface so tests can move it (idempotency expiry, rate windows).
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test can set and advance. */
export function manualClock(start = new Date()): Clock & { advance(ms: number): void; set(d: Date): void } {
  let t = start.getTime();
  return {
    now: () => new Date(t),
    advance: (ms) => {
      t += ms;
    },
    set: (d) => {
      t = d.getTime();
    },
  };
}
