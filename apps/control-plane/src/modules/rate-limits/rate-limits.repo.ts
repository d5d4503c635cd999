// The shared fixed-window counters (rate_limit_counters) every replica leases from.
//
// Leases are coalesced: one goes out at once, and those asked for while it is in flight go
// together in the next statement. When a window starts, every active key leases its new
// budget within moments; one statement (and one commit) for each of them took the pool's
// connections from the requests themselves. The rows of a statement are locked in
// (bucket, window_start) order, the same on every replica, so two replicas' statements never
// deadlock.
import type pg from "pg";

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

/** Leases per statement at most; more wait for the next one. */
const MAX_BATCH = 500;

interface Wanted {
  bucket: string;
  windowStart: number;
  n: number;
  limit: number;
  resolve(count: number | null): void;
  reject(error: unknown): void;
}

export function createRateLimitsRepo(pool: pg.Pool) {
  let queue: Wanted[] = [];
  let inFlight = false;

  /** One statement for what is queued (a (bucket, window) once; a repeat waits for the next). */
  async function send(): Promise<void> {
    inFlight = true;
    try {
      while (queue.length > 0) {
        const seen = new Set<string>();
        const batch: Wanted[] = [];
        const later: Wanted[] = [];
        for (const w of queue) {
          const id = `${w.windowStart}:${w.bucket}`;
          if (batch.length < MAX_BATCH && !seen.has(id)) {
            seen.add(id);
            batch.push(w);
          } else later.push(w);
        }
        queue = later;
        try {
          const { rows } = await pool.query<{ bucket: string; window_start: string; count: number }>({
            name: "berth_rate_lease",
            text: LEASE_SQL,
            values: [batch.map((w) => w.bucket), batch.map((w) => w.windowStart), batch.map((w) => w.n), batch.map((w) => w.limit)],
          });
          const counts = new Map(rows.map((r) => [`${r.window_start}:${r.bucket}`, r.count]));
          for (const w of batch) w.resolve(counts.get(`${w.windowStart}:${w.bucket}`) ?? null);
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      inFlight = false;
    }
  }

  return {
    /** Adds n to the bucket's counter unless that would pass the limit: the counter after, or null. */
    lease(bucket: string, windowStart: number, n: number, limit: number): Promise<number | null> {
      return new Promise<number | null>((resolve, reject) => {
        queue.push({ bucket, windowStart, n, limit, resolve, reject });
        if (!inFlight) void send();
      });
    },
    /** Forgets windows that started before windowStart. */
    async pruneBefore(windowStart: number): Promise<void> {
      await pool.query("delete from rate_limit_counters where window_start < $1", [windowStart]);
    },
  };
}
export type RateLimitsRepo = ReturnType<typeof createRateLimitsRepo>;
