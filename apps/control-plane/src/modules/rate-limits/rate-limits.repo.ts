// The shared fixed-window counters (rate_limit_counters) every replica leases from.
import type pg from "pg";

const LEASE_SQL = `
insert into rate_limit_counters as c (bucket, window_start, count) values ($1, $2, $3)
on conflict (bucket, window_start) do update set count = c.count + $3 where c.count + $3 <= $4
returning c.count`;

export function createRateLimitsRepo(pool: pg.Pool) {
  return {
    /** Adds n to the bucket's counter unless that would pass the limit: the counter after, or null. */
    async lease(bucket: string, windowStart: number, n: number, limit: number): Promise<number | null> {
      const { rows } = await pool.query<{ count: number }>({ name: "berth_rate_lease", text: LEASE_SQL, values: [bucket, windowStart, n, limit] });
      return rows[0]?.count ?? null;
    },
    /** Forgets windows that started before windowStart. */
    async pruneBefore(windowStart: number): Promise<void> {
      await pool.query("delete from rate_limit_counters where window_start < $1", [windowStart]);
    },
  };
}
export type RateLimitsRepo = ReturnType<typeof createRateLimitsRepo>;
