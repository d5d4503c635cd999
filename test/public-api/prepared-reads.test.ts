// Hot reads (apps/control-plane/src/db/prepared-read.ts): rows exactly as drizzle's own select
// gives them, whether PostgreSQL described the result (a connection's first execution) or not
// (every later one); a connection describes a statement once, not on every execution; and a
// read that fails, in PostgreSQL, in sending a value or in reading a row, fails alone and leaves
// its connection working.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { and, eq, sql } from "drizzle-orm";
import { boolean, customType, integer, jsonb, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { drizzle } from "drizzle-orm/node-postgres";
import pg from "pg";
import { preparedRead } from "../../apps/control-plane/src/db/prepared-read.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

/** A column whose reading fails for one stored value, as a decoder meeting data it cannot take would. */
const picky = customType<{ data: string; driverData: string }>({
  dataType: () => "text",
  fromDriver: (value) => {
    if (value === "unreadable") throw new Error("picky: cannot read this value");
    return value.toUpperCase();
  },
});
const things = pgTable("hot_read_things", {
  id: uuid("id").primaryKey(),
  name: text("name").notNull(),
  note: text("note"),
  size: integer("size"),
  active: boolean("active").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  doneAt: timestamp("done_at", { withTimezone: true }),
  details: jsonb("details"),
  label: picky("label"),
});
const columns = {
  id: things.id,
  name: things.name,
  note: things.note,
  size: things.size,
  active: things.active,
  createdAt: things.createdAt,
  doneAt: things.doneAt,
  details: things.details,
  label: things.label,
  siblings: sql<number>`(select count(*)::int from hot_read_things t where t.name = ${things.name})`,
};

let db: TestDatabase;
let ids: string[];
beforeAll(async () => {
  db = await createTestDatabase();
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    await client.query(`create table hot_read_things (id uuid primary key, name text not null, note text, size integer, active boolean not null,
      created_at timestamptz not null, done_at timestamptz, details jsonb, label text)`);
    const { rows } = await client.query<{ id: string }>(
      `insert into hot_read_things
       select gen_random_uuid(), 'thing ' || (i % 3), case when i % 2 = 0 then null else 'note ' || i end, case when i % 4 = 0 then null else i * 7 end,
              i % 2 = 0, timestamptz '2026-03-01 12:00:00.123456+00' + i * interval '1 hour', case when i % 3 = 0 then null else now() end,
              case when i % 5 = 0 then null else jsonb_build_object('i', i, 'tags', jsonb_build_array('a', i)) end,
              case when i = 7 then 'unreadable' else 'label ' || i end
       from generate_series(1, 12) i order by i returning id`,
    );
    ids = rows.map((r) => r.id);
  } finally {
    await client.end();
  }
});
afterAll(async () => db?.drop());

/** A pool whose connections count the Describe messages they send. */
function describingPool(max: number) {
  const pool = new pg.Pool({ connectionString: db.url, max });
  let describes = 0;
  pool.on("connect", (client) => {
    const connection = (client as unknown as { connection: { describe: (...a: unknown[]) => void } }).connection;
    const describe = connection.describe.bind(connection);
    connection.describe = (...a: unknown[]) => {
      describes++;
      describe(...a);
    };
  });
  return { pool, db: drizzle(pool), describes: () => describes };
}

const byId = (d: ReturnType<typeof drizzle>) => d.select(columns).from(things).where(eq(things.id, sql.placeholder("id")));
const readable = () => ids.filter((_, i) => i !== 6);

describe("prepared reads", () => {
  it("give drizzle's own rows, on every connection, from the first execution on, and describe a statement once per connection", async () => {
    const { pool, db: d, describes } = describingPool(3);
    try {
      const read = preparedRead(pool, "hot_read_by_id", byId(d), columns);
      const expected = await Promise.all(readable().map(async (id) => (await d.select(columns).from(things).where(eq(things.id, id)))[0]));
      expect(expected.some((r) => r?.doneAt === null) && expected.some((r) => r?.doneAt instanceof Date)).toBe(true);
      const before = describes();
      for (let round = 0; round < 4; round++) {
        const got = await Promise.all(readable().map(async (id) => (await read({ id }))[0]));
        expect(got).toEqual(expected);
      }
      // 44 executions over at most 3 connections.
      expect(describes() - before).toBeGreaterThan(0);
      expect(describes() - before).toBeLessThanOrEqual(3);

      const many = preparedRead(pool, "hot_read_page", d.select(columns).from(things).where(and(eq(things.active, sql.placeholder("active")))).orderBy(things.createdAt).limit(sql.placeholder("limit")), columns);
      const page = await d.select(columns).from(things).where(and(eq(things.active, true))).orderBy(things.createdAt).limit(4);
      for (let i = 0; i < 3; i++) expect(await many({ active: true, limit: 4 })).toEqual(page);
      expect(await many({ active: true, limit: 0 })).toEqual([]);
    } finally {
      await pool.end();
    }
  });

  it("fail alone, and leave the connection working, when PostgreSQL refuses a value, when a value cannot be sent, or when a row cannot be read", async () => {
    const { pool, db: d } = describingPool(1);
    try {
      const read = preparedRead(pool, "hot_read_by_id", byId(d), columns);
      const details = preparedRead(pool, "hot_read_by_details", d.select(columns).from(things).where(eq(things.details, sql.placeholder("details"))), columns);
      const good = ids[0]!;
      const expected = await read({ id: good });
      expect(expected).toHaveLength(1);
      await details({ details: { i: 1 } });

      // Each failure comes after the statement is prepared on the one connection (no Describe sent).
      await expect(read({ id: "not-a-uuid" })).rejects.toMatchObject({ code: "22P02" });
      expect(await read({ id: good })).toEqual(expected);

      const circular: Record<string, unknown> = {};
      circular.self = circular;
      await expect(details({ details: circular })).rejects.toThrow(/circular/i);
      expect(await read({ id: good })).toEqual(expected);

      await expect(read({ id: ids[6]! })).rejects.toThrow("picky: cannot read this value");
      expect(await read({ id: good })).toEqual(expected);
      expect(await details({ details: { i: 1, tags: ["a", 1] } })).toEqual(await d.select(columns).from(things).where(eq(things.id, good)));
    } finally {
      await pool.end();
    }
  });
});
