// Idempotency records (public spec 4.4): a claim per (scope, key), the stored response, and
// their expiry.
import type pg from "pg";

const CLAIM = `
insert into idempotency_records as r (scope, key, state, method, path, created_at, locked_at, expires_at)
values ($1, $2, 'in_flight', $3, $4, $5, $5, $6)
on conflict (scope, key) do update
  set state = 'in_flight', method = excluded.method, path = excluded.path, status_code = null,
      response_body = null, response_headers = null, created_at = excluded.created_at,
      locked_at = excluded.locked_at, expires_at = excluded.expires_at
  where r.expires_at <= $5 or (r.state = 'in_flight' and r.locked_at <= $7)
returning 1`;

export interface Stored {
  state: string;
  status_code: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
}

export function createIdempotencyRepo(pool: pg.Pool) {
  return {
    /** Claims the key for a request: true unless another live request holds it or its response is kept. */
    async claim(c: { scope: string; key: string; method: string; path: string; now: Date; expiresAt: Date; abandonedBefore: Date }): Promise<boolean> {
      const claimed = await pool.query(CLAIM, [c.scope, c.key, c.method, c.path, c.now, c.expiresAt, c.abandonedBefore]);
      return claimed.rowCount === 1;
    },

    async stored(scope: string, key: string): Promise<Stored | undefined> {
      const { rows } = await pool.query<Stored>(
        "select state, status_code, response_body, response_headers from idempotency_records where scope = $1 and key = $2",
        [scope, key],
      );
      return rows[0];
    },

    /** Keeps the response for replays. */
    async complete(scope: string, key: string, r: { statusCode: number; body: string; headers: Record<string, string> }): Promise<void> {
      await pool.query(
        `update idempotency_records set state = 'completed', status_code = $3, response_body = $4, response_headers = $5
         where scope = $1 and key = $2`,
        [scope, key, r.statusCode, r.body, r.headers],
      );
    },

    /**
     * Gives the key up (the request failed on our side), so the client may retry with it: the
     * claim made at `claimedAt` only, never a later request's that took the key over.
     */
    async release(scope: string, key: string, claimedAt: Date): Promise<void> {
      await pool.query("delete from idempotency_records where scope = $1 and key = $2 and state = 'in_flight' and locked_at = $3", [scope, key, claimedAt]);
    },

    async pruneExpired(now: Date): Promise<void> {
      await pool.query("delete from idempotency_records where expires_at < $1", [now]);
    },
  };
}
export type IdempotencyRepo = ReturnType<typeof createIdempotencyRepo>;
