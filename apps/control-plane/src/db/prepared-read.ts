// Hot reads as named statements sent straight to the pool. The SQL is still drizzle's, built
// once from the schema; what is skipped is drizzle's per-execution work (tracing spans,
// placeholder filling, a type-parser closure per column) and its generic row mapping. Rows
// come as arrays and each value goes through its column's own mapFromDriverValue, so a row
// is exactly what drizzle's select would have returned.
import { Column, SQL, is, Placeholder } from "drizzle-orm";
import pg from "pg";

interface Decoder {
  mapFromDriverValue(value: unknown): unknown;
}

/** A select built by drizzle: its SQL, and the row type it resolves to. */
interface SelectQuery<R> extends PromiseLike<R[]> {
  toSQL(): { sql: string; params: unknown[] };
}

const raw = (value: string) => value;
// As drizzle's node-postgres driver: dates, times and intervals (and their arrays) arrive as
// text and are turned into values by the column (a timestamp column makes its Date).
const RAW_TYPES = new Set([pg.types.builtins.TIMESTAMPTZ, pg.types.builtins.TIMESTAMP, pg.types.builtins.DATE, pg.types.builtins.INTERVAL, 1231, 1115, 1185, 1187, 1182]);
const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") => (RAW_TYPES.has(oid) ? raw : pg.types.getTypeParser(oid, format as "text")),
};

/** What drizzle's row mapping decodes a field with (a SQL's decoder is internal to drizzle's types). */
function decoderOf(field: unknown): Decoder {
  if (is(field, Column)) return field;
  if (is(field, SQL)) return (field as unknown as { decoder: Decoder }).decoder;
  if (is(field, SQL.Aliased)) return (field.sql as unknown as { decoder: Decoder }).decoder;
  throw new Error("preparedRead: a selected field is neither a column nor SQL");
}

/**
 * A named statement for `query`, whose flat selection is `fields` (the object given to
 * db.select, in the same order). Values for drizzle's sql.placeholder()s are passed by name.
 */
export function preparedRead<R>(pool: pg.Pool, name: string, query: SelectQuery<R>, fields: Record<string, unknown>) {
  const { sql: text, params } = query.toSQL();
  const keys = Object.keys(fields);
  const decoders = keys.map((k) => decoderOf(fields[k]));
  // Each parameter is a placeholder's name or a value fixed in the query.
  const names = params.map((p) => (is(p, Placeholder) ? (p.name as string) : null));
  // One generated object literal per row, not one computed key at a time: an object given more
  // than a dozen properties by computed keys falls into V8's dictionary mode, slow to build and
  // then to read for every consumer (views, the response serializer). The keys are the
  // selection's own names, written as JSON string literals, once per statement.
  if (keys.includes("__proto__")) throw new Error("preparedRead: a selected field is named __proto__");
  const literal = keys.map((k, i) => `${JSON.stringify(k)}: (v = row[${i}]) === null ? null : d[${i}].mapFromDriverValue(v)`).join(",\n");
  const decode = new Function("d", `return function decode(row) { let v; return {\n${literal}\n}; };`)(decoders) as (row: unknown[]) => R;
  // A plain function returning the query's promise: hot reads pay no async frame of their own.
  const decodeAll = (result: pg.QueryResult<unknown[]>) => result.rows.map(decode);
  // pg copies a query's config, own property by property (with their descriptors), before it
  // sends it. What is the same on every execution sits on the config's prototype, which the
  // copy shares: only the values are copied.
  const statement = { name, text, rowMode: "array" as const, types };
  return (args: Record<string, unknown>): Promise<R[]> => {
    const config = Object.create(statement) as pg.QueryArrayConfig;
    config.values = names.map((n, i) => (n === null ? params[i] : args[n]));
    return pool.query<unknown[]>(config).then(decodeAll);
  };
}
