// Counts the statements a pg pool is asked to run, for tests of how many round trips
// something takes.
import type pg from "pg";

/** Wraps pool.query; the returned function answers how many calls it has seen. */
export function countStatements(pool: pg.Pool): () => number {
  let n = 0;
  const query = pool.query.bind(pool);
  (pool as unknown as { query: typeof query }).query = ((...args: Parameters<typeof query>) => {
    n++;
    return query(...args);
  }) as typeof query;
  return () => n;
}
