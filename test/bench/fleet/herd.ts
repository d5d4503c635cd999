// The thundering-herd figures of bench:fleet: a replica is killed, its agents reconnect to the
// survivors, and the agent processes' HerdReports (ipc.ts) say when each attempt started, when
// each handshake finished and when each dropped link was back. Times are monoMs.
import type { HerdReport } from "./ipc.ts";

export interface HerdFigures {
  dropped: number;
  back: number;
  /** Attempts (sockets opened) and handshakes completed: the busiest 100 ms and 1 s, per second. */
  peakAttemptsPerS100ms: number;
  peakAttemptsPerS1s: number;
  peakHandshakesPerS100ms: number;
  peakHandshakesPerS1s: number;
  /** Kill to ready again, of the links that came back (ms). */
  backP50Ms: number;
  backP99Ms: number;
  backMaxMs: number;
  attempts: number;
  /** Attempts that closed before ready, by close code, and their socket errors. */
  failedByCode: Record<string, number>;
  errors: Record<string, number>;
  failed: number;
  pending: number;
}

export function mergeHerdReports(reports: HerdReport[]): HerdReport {
  const out: HerdReport = { dropped: 0, backAt: [], attemptAt: [], readyAt: [], failedByCode: {}, errors: {}, drainCloses: 0, pending: 0 };
  for (const r of reports) {
    out.dropped += r.dropped;
    out.drainCloses += r.drainCloses;
    out.pending += r.pending;
    out.backAt.push(...r.backAt);
    out.attemptAt.push(...r.attemptAt);
    out.readyAt.push(...r.readyAt);
    for (const [k, n] of Object.entries(r.failedByCode)) out.failedByCode[k] = (out.failedByCode[k] ?? 0) + n;
    for (const [k, n] of Object.entries(r.errors)) out.errors[k] = (out.errors[k] ?? 0) + n;
  }
  return out;
}

/** The largest count in any window of `windowMs` that starts at a multiple of `stepMs` after t0, as a rate per second. */
export function peakPerSecond(times: number[], t0: number, windowMs: number, stepMs = 100): number {
  if (times.length === 0) return 0;
  const buckets = new Map<number, number>();
  for (const t of times) {
    const b = Math.floor((t - t0) / stepMs);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const span = windowMs / stepMs;
  let best = 0;
  for (const start of buckets.keys()) {
    let n = 0;
    for (let b = start; b < start + span; b++) n += buckets.get(b) ?? 0;
    if (n > best) best = n;
  }
  return Math.round((best * 1000) / windowMs);
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export function herdFigures(r: HerdReport, killAt: number): HerdFigures {
  const back = r.backAt.map((t) => t - killAt).sort((a, b) => a - b);
  const failed = Object.values(r.failedByCode).reduce((a, b) => a + b, 0);
  return {
    dropped: r.dropped,
    back: back.length,
    peakAttemptsPerS100ms: peakPerSecond(r.attemptAt, killAt, 100),
    peakAttemptsPerS1s: peakPerSecond(r.attemptAt, killAt, 1000),
    peakHandshakesPerS100ms: peakPerSecond(r.readyAt, killAt, 100),
    peakHandshakesPerS1s: peakPerSecond(r.readyAt, killAt, 1000),
    backP50Ms: Math.round(percentile(back, 50)),
    backP99Ms: Math.round(percentile(back, 99)),
    backMaxMs: Math.round(back[back.length - 1] ?? Number.NaN),
    attempts: r.attemptAt.length,
    failedByCode: r.failedByCode,
    errors: r.errors,
    failed,
    pending: r.pending,
  };
}
