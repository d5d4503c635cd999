// A delete of many rows as a series of statements of at most `chunk` rows each, so that no
// one statement holds a long transaction (streams, readers and replicas wait on none).
import type pg from "pg";

/**
 * Runs `statement`, a delete of at most `chunk` rows (its limit written in it), again until
 * one deletes fewer: then nothing it selects is left. How many rows went.
 */
export async function deleteInChunks(client: Pick<pg.ClientBase, "query">, statement: string, params: unknown[], chunk: number): Promise<number> {
  let removed = 0;
  for (;;) {
    const { rowCount } = await client.query(statement, params);
    removed += rowCount ?? 0;
    if ((rowCount ?? 0) < chunk) return removed;
  }
}
