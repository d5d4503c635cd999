// Hot reads as named statements sent straight to the pool. The SQL is still drizzle's, built
// once from the schema; what is skipped is drizzle's per-execution work (tracing spans,
// placeholder filling, a type-parser closure per column) and its generic row mapping. Rows
// come as arrays and each value goes through its column's own mapFromDriverValue, so a row
// is exactly what drizzle's select would have returned.
//
// Also skipped is pg's own per-execution work on the result's shape. pg asks PostgreSQL to
// describe the result of every execution (Describe), parses the answer (RowDescription) and
// builds a row template and a parser per column from it, each time: ~7 us of a 14-column read.
// A statement's columns do not change while it is prepared (PostgreSQL refuses to run it
// otherwise), so a hot read learns them from its first execution's RowDescription and, on a
// connection where the statement is already prepared, sends Bind, Execute and Sync alone.
import { Column, SQL, is, Placeholder } from "drizzle-orm";
import pg from "pg";
// pg's own conversion of parameter values (Dates, arrays, JSON), as its Query uses for Bind.
import { prepareValue } from "pg/lib/utils.js";

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
const parserOf = (oid: number): ((value: string) => unknown) => (RAW_TYPES.has(oid) ? raw : pg.types.getTypeParser(oid, "text"));

/** What pg's Query keeps and does that a hot read uses (pg's Submittable protocol, as pg-cursor uses it). */
interface PgQueryInternals {
  name: string;
  values: unknown[];
  _result: { rows: unknown[] };
  _canceledDueToError: unknown;
  hasBeenParsed(connection: PgConnection): boolean;
  handleError(err: unknown, connection: PgConnection): void;
}
interface PgConnection {
  bind(config: { portal: string; statement: string; values: unknown[]; valueMapper: typeof prepareValue }): void;
  execute(config: { portal: string }): void;
  sync(): void;
  close(config: { type: "S"; name: string }): void;
}
interface RowDescription {
  fields: { dataTypeID: number }[];
}

/** A statement of a hot read: its name and text, and once known, how to turn a data row into its row. */
interface Statement {
  name: string;
  text: string;
  /** A data row's text values, each parsed by its column's parser and decoded by its field. */
  decodeRow: (values: (string | null)[], parsers: ((value: string) => unknown)[]) => unknown;
  /** Each column's parser from text, from the first RowDescription PostgreSQL sent for it. */
  parsers: ((value: string) => unknown)[] | null;
}

/** One execution of a hot read: pg's Query, minus the per-execution Describe and row template. */
class HotRead extends pg.Query {
  constructor(
    private readonly statement: Statement,
    values: unknown[],
  ) {
    super({ name: statement.name, text: statement.text, values });
  }

  /** pg's prepare(), without Describe where the statement is parsed on this connection and its columns are known. */
  prepare(connection: PgConnection): void {
    const self = this as unknown as PgQueryInternals;
    if (this.statement.parsers === null || !self.hasBeenParsed(connection)) {
      (pg.Query.prototype as unknown as { prepare(c: PgConnection): void }).prepare.call(this, connection);
      return;
    }
    try {
      connection.bind({ portal: "", statement: self.name, values: self.values, valueMapper: prepareValue });
    } catch (err) {
      // As pg: a value that cannot be sent fails this query, and the connection stays usable.
      connection.close({ type: "S", name: self.name });
      connection.sync();
      self.handleError(err, connection);
      return;
    }
    connection.execute({ portal: "" });
    connection.sync();
  }

  handleRowDescription(msg: RowDescription): void {
    this.statement.parsers ??= msg.fields.map((f) => parserOf(f.dataTypeID));
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    const self = this as unknown as PgQueryInternals;
    if (self._canceledDueToError) return;
    try {
      self._result.rows.push(this.statement.decodeRow(msg.fields, this.statement.parsers!));
    } catch (err) {
      // As pg: the query fails with this error once PostgreSQL has finished answering it.
      self._canceledDueToError = err;
    }
  }
}

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
  const literal = keys.map((k, i) => `${JSON.stringify(k)}: (v = row[${i}]) === null ? null : d[${i}].mapFromDriverValue(p[${i}](v))`).join(",\n");
  const decode = new Function("d", `return function decode(row, p) { let v; return {\n${literal}\n}; };`)(decoders) as Statement["decodeRow"];
  const statement: Statement = { name, text, decodeRow: decode, parsers: null };
  // A plain function returning the query's promise: hot reads pay no async frame of their own.
  const rowsOf = (result: { rows: unknown[] }) => result.rows as R[];
  return (args: Record<string, unknown>): Promise<R[]> => {
    const query = new HotRead(statement, names.map((n, i) => (n === null ? params[i] : args[n])));
    return (pool.query(query as unknown as pg.QueryConfig) as unknown as Promise<{ rows: unknown[] }>).then(rowsOf);
  };
}
