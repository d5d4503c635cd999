// Benchmarks read their knobs from the environment: BENCH_<NAME>=<positive number>.

/**
 * A number from the environment, or the fallback when unset; anything else stops the bench.
 * Without `min` it must be positive; with it, at least `min`.
 */
export function setting(name: string, fallback: number, min?: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  const ok = Number.isFinite(n) && (min === undefined ? n > 0 : n >= min);
  if (!ok) throw new Error(`${name} must be ${min === undefined ? "a positive number" : `a number >= ${min}`}, got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * The agent link's limits for benchmarks whose simulated agents all connect from 127.0.0.1
 * and send far more log lines than a real server's budget (bench:fleet's blast is about
 * 1,300 lines a second per agent, bench:events' as many as the path stores): every
 * per-address and per-server limit is out of the way, so the figures stay comparable with
 * runs from before the limits. The limits' own cost (counting each line) is still paid.
 */
export const BENCH_AGENT_LIMITS = {
  logLinesPerMinute: Number.MAX_SAFE_INTEGER,
  logBytesPerMinute: Number.MAX_SAFE_INTEGER,
  handshakesPerAddress: Number.MAX_SAFE_INTEGER,
  hellosPerAddressPerMinute: Number.MAX_SAFE_INTEGER,
} as const;
