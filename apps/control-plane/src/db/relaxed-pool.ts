// A second, small pool whose commits do not wait for the write-ahead log to reach the disk.
// For writes whose loss in a database crash costs nothing: liveness times, and a command's
// "sent" and "accepted"/"refused" marks (a command that loses them is sent again on the next
// connection, and the agent answers from its journal, never running it twice). On a disk whose
// fsync takes milliseconds these would otherwise queue with the writes that must wait for it.
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { schema, survivePgRestarts, type Database } from "@berth/db";

export interface RelaxedDb {
  pool: pg.Pool;
  db: Database;
  close(): Promise<void>;
}

export function createRelaxedDb(pool: pg.Pool, max = 3): RelaxedDb {
  const relaxed = survivePgRestarts(new pg.Pool({ ...pool.options, max, options: "-c synchronous_commit=off" }));
  return { pool: relaxed, db: drizzle(relaxed, { schema }), close: () => relaxed.end() };
}
