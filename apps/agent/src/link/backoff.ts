// Reconnect delays: exponential with a cap and "full jitter" (a uniform draw between 0 and
// the current ceiling). When the control plane restarts, every agent loses its link at the
// same instant; full jitter spreads their returns over the whole window instead of letting
// them arrive in synchronized waves at 1 s, 2 s, 4 s...

export interface BackoffOptions {
  /** Ceiling of the first delay. Default 1 s. */
  baseMs?: number;
  /** Largest ceiling. Default 60 s. */
  capMs?: number;
  /** Uniform in [0, 1); seeded in tests. */
  random?: () => number;
}

export interface Backoff {
  /** The delay before the next attempt; each call raises the ceiling until the cap. */
  next(): number;
  /** Back to the first ceiling, after a connection proved stable. */
  reset(): void;
  /** Straight to the cap, when the control plane said retrying soon cannot help. */
  toMax(): void;
  readonly attempt: number;
}

export function createBackoff(options: BackoffOptions = {}): Backoff {
  const base = options.baseMs ?? 1_000;
  const cap = options.capMs ?? 60_000;
  const random = options.random ?? Math.random;
  const maxAttempt = Math.ceil(Math.log2(cap / base));
  let attempt = 0;
  return {
    next() {
      const ceiling = ceilingFor(attempt, base, cap);
      attempt = Math.min(attempt + 1, maxAttempt);
      return Math.floor(random() * ceiling);
    },
    reset() {
      attempt = 0;
    },
    toMax() {
      attempt = maxAttempt;
    },
    get attempt() {
      return attempt;
    },
  };
}

export function ceilingFor(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** attempt);
}
