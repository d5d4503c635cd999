// The shared fixed-window counters (rate_limit_counters) every replica leases from.
//
// Leases are coalesced (db/coalesce.ts): when a window starts, every active key leases its
// new budget within moments, and a statement (and commit) for each took the pool's
// connections from the requests themselves. The rows of a statement are locked in
// (bucket, window_start) order, the same on every replica, so two replicas' statements never
// deadlock.
import type pg from "pg";
import { coalesce } from "../../db/coalesce.ts";

const LEASE_SQL = `
insert into rate_limit_counters as c (bucket, window_start, count)
select l.bucket, l.window_start, l.n from unnest($1::text[], $2::bigint[], $3::int[]) as l(bucket, window_start, n)
order by l.bucket, l.window_start
on conflict (bucket, window_start) do update set count = c.count + excluded.count
where c.count + excluded.count <= (
  select m.lim from unnest($1::text[], $2::bigint[], $4::int[]) as m(bucket, window_start, lim)
  where m.bucket = excluded.bucket and m.window_start = excluded.window_start
)
returning c.bucket, c.window_start, c.count`;

interface Lease {
  bucket: string;
  windowStart: number;
  n: number;
  limit: number;
}

const idOf = (l: { bucket: string; windowStart: number | string }) => `${l.windowStart}:${l.bucket}`;

export function createRateLimitsRepo(pool: pg.Pool) {
  const lease = coalesce(
    async (batch: Lease[]): Promise<(number | null)[]> => {
      const { rows } = await pool.query<{ bucket: string; window_start: string; count: number }>({
        name: "berth_rate_lease",
        text: LEASE_SQL,
        values: [batch.map((l) => l.bucket), batch.map((l) => l.windowStart), batch.map((l) => l.n), batch.map((l) => l.limit)],
      });
      // A refused lease has no row.
      const counts = new Map(rows.map((r) => [idOf({ bucket: r.bucket, windowStart: r.window_start }), r.count]));
      return batch.map((l) => counts.get(idOf(l)) ?? null);
    },
    { max: 500, idOf },
  );

  return {
    /** Adds n to the bucket's counter unless that would pass the limit: the counter after, or null. */
    lease(bucket: string, windowStart: number, n: number, limit: number): Promise<number | null> {
      return lease({ bucket, windowStart, n, limit });
    },
    /** Forgets windows that started before windowStart. */
    async pruneBefore(windowStart: number): Promise<void> {
      await pool.query("delete from rate_limit_counters where window_start < $1", [windowStart]);
    },
  };
}
export type RateLimitsRepo = ReturnType<typeof createRateLimitsRepo>;
