// Client factory: callers own the pool and pass the drizzle handle down; nothing here is global.
import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import pg from "pg";
import * as schema from "./schema.ts";

/** The query builder, and under it ($client) the pool, for hot paths that use named statements. */
export type Database = NodePgDatabase<typeof schema> & { $client: pg.Pool };

export interface DbHandle {
  pool: pg.Pool;
  db: Database;
  close(): Promise<void>;
}

/**
 * Keeps a lost database server from crashing the process: an idle client's error goes to the
 * pool's listener, and every client gets a listener of its own for the time it is checked out
 * (pg-pool removes its idle listener then, and a client in use when PostgreSQL restarts emits
 * 'error', which with no listener is an uncaught exception). The queries in flight still fail
 * and the pool discards the broken client when it is released; the next query reconnects.
 */
export function survivePgRestarts(pool: pg.Pool): pg.Pool {
  pool.on("error", () => {});
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

export function createDb(connectionString: string, options: { max?: number } = {}): DbHandle {
  const pool = survivePgRestarts(new pg.Pool({ connectionString, max: options.max ?? 20 }));
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}
