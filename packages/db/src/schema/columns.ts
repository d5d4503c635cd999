// Column builders every table file shares. Not re-exported by the schema barrel: they are
// how tables are written, not part of @berth/db.
import { sql } from "drizzle-orm";
import { customType, timestamp, uuid } from "drizzle-orm/pg-core";

// Millisecond precision: a JavaScript Date holds exactly what is stored, so keyset cursors round-trip.
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });
export const id = () => uuid("id").primaryKey().default(sql`gen_random_uuid()`);
/**
 * The writing transaction's id. Readers of an append-only stream deliver only rows whose
 * transaction is older than every transaction still running, so a row that commits late
 * can never fall behind a reader's cursor (no gaps on resume).
 */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => "xid8" });
export const txId = () => xid8("tx").notNull().default(sql`pg_current_xact_id()`);
