// Benchmarks read their knobs from the environment: BENCH_<NAME>=<positive number>.

/** A positive number from the environment, or the fallback when unset; anything else stops the bench. */
export function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
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
