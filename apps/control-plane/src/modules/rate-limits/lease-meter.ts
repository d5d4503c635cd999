// Rate limits counted in PostgreSQL without a round trip per request. A replica leases
// units of a key's budget from the shared counter (one atomic upsert that never takes the
// counter past the limit) and spends them locally. Leases are large while the budget is far
// from spent and one unit at a time in the last 16, so no more requests than the limit are
// ever admitted across replicas, and a replica only refuses once the shared counter is at
// the limit. Units a replica leased but did not spend are spent by its own next requests;
// if its traffic for that key stops, they expire with the window (at most a quarter of
// what was left when it leased, never any of the last 16).
import type { RateLimitsRepo } from "./rate-limits.repo.ts";

export interface Meter {
  limit: number;
  used: number;
  resetAt: number; // epoch seconds
}

/** A lease takes this fraction of what is left of the budget (at least one unit). */
const LEASE_FRACTION = 4;
/** Below this many units left, leases are single units. */
const EXACT_BELOW = 16;

interface Local {
  /** Units leased and not spent yet. */
  units: number;
  /** The shared counter after this replica's last lease. */
  counted: number;
  /** The shared counter is at the limit: nothing more to lease this window. */
  spent: boolean;
  /** A lease in flight: requests wait for it rather than each leasing on their own. */
  pending: Promise<void> | null;
}

export interface LeaseMeter {
  hit(bucket: string, windowStart: number, limit: number, resetAt: number): Promise<Meter>;
  /** hit() when it needs no lease (a unit left here, or the budget spent): the meter, else undefined and nothing spent. */
  hitNow?(bucket: string, windowStart: number, limit: number, resetAt: number): Meter | undefined;
}

export function createLeaseMeter(repo: Pick<RateLimitsRepo, "lease">): LeaseMeter {
  // Window start -> bucket -> state: the bucket strings are the callers' own, so a hit builds
  // no key. A new window forgets the older ones (what was left of them is gone).
  const windows = new Map<number, Map<string, Local>>();
  let currentWindow = 0;
  const lease = repo.lease;

  /** This replica's state of a bucket in a window. */
  function localOf(bucket: string, windowStart: number): Local {
    let buckets = windows.get(windowStart);
    if (!buckets) {
      if (windowStart > currentWindow) {
        windows.clear();
        currentWindow = windowStart;
      }
      windows.set(windowStart, (buckets = new Map()));
    }
    let s = buckets.get(bucket);
    if (!s) {
      s = { units: 0, counted: 0, spent: false, pending: null };
      buckets.set(bucket, s);
    }
    return s;
  }

  return {
    hitNow(bucket, windowStart, limit, resetAt) {
      const local = localOf(bucket, windowStart);
      if (local.units > 0) {
        local.units -= 1;
        return { limit, used: Math.min(limit, local.counted - local.units), resetAt };
      }
      if (local.spent) return { limit, used: limit + 1, resetAt };
      return undefined;
    },
    async hit(bucket, windowStart, limit, resetAt) {
      const local = localOf(bucket, windowStart);
      for (;;) {
        if (local.units > 0) {
          local.units -= 1;
          return { limit, used: Math.min(limit, local.counted - local.units), resetAt };
        }
        if (local.spent) return { limit, used: limit + 1, resetAt };
        if (local.pending) {
          await local.pending;
          continue;
        }
        local.pending = (async () => {
          const left = limit - local.counted;
          const size = left >= EXACT_BELOW ? Math.max(1, Math.floor(left / LEASE_FRACTION)) : 1;
          let got = await lease(bucket, windowStart, size, limit);
          let taken = size;
          if (got === null && size > 1) {
            got = await lease(bucket, windowStart, 1, limit);
            taken = 1;
          }
          if (got === null) {
            local.spent = true;
            local.counted = limit;
          } else {
            local.counted = Math.max(local.counted, got);
            local.units += taken;
          }
        })().finally(() => {
          local.pending = null;
        });
      }
    },
  };
}
