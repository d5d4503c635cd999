// Benchmarks read their knobs from the environment: BENCH_<NAME>=<positive number>.

/** A positive number from the environment, or the fallback when unset; anything else stops the bench. */
export function setting(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return n;
}
