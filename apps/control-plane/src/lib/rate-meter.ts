// Fixed-window counters in PostgreSQL (rate_limit_counters), shared by every replica:
// one upsert per hit, answering how many hits the window holds now.
import type pg from "pg";
import type { Clock } from "./clock.ts";
import { DomainError } from "./errors.ts";
import { RATE_WINDOW_SECONDS, rateHeaders, type Meter } from "../public-api/rate-limits.ts";

export async function hit(pool: pg.Pool, clock: Clock, bucket: string, limit: number): Promise<Meter> {
  const now = clock.now().getTime() / 1000;
  const windowStart = Math.floor(now / RATE_WINDOW_SECONDS) * RATE_WINDOW_SECONDS;
  const { rows } = await pool.query<{ count: number }>(
    `insert into rate_limit_counters as c (bucket, window_start, count) values ($1, $2, 1)
     on conflict (bucket, window_start) do update set count = c.count + 1 returning c.count`,
    [bucket, windowStart],
  );
  return { limit, used: rows[0]!.count, resetAt: windowStart + RATE_WINDOW_SECONDS };
}

/** Counts a hit; sets the X-RateLimit-* headers; throws 429 with Retry-After when over the limit. */
export async function enforce(
  pool: pg.Pool,
  clock: Clock,
  reply: { headers(h: Record<string, string>): unknown },
  bucket: string,
  limit: number,
  what: string,
): Promise<void> {
  const m = await hit(pool, clock, bucket, limit);
  reply.headers(rateHeaders(m));
  if (m.used <= m.limit) return;
  const retryAfter = Math.max(1, Math.ceil(m.resetAt - clock.now().getTime() / 1000));
  throw new DomainError("rate_limit_exceeded", `At most ${limit} ${what} per ${RATE_WINDOW_SECONDS} seconds; retry in ${retryAfter} s`, undefined, {
    "retry-after": String(retryAfter),
  });
}
