// Migration 0022 on a database that already holds rows: agent_events and deployment_logs
// become month partitions with every row kept (ids, tx, the id sequence), old, current and
// far-off rows each where they belong, and the keys that make resends harmless still refuse a
// duplicate.
import type pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { databaseBefore, type DatabaseBefore } from "../support/migrations-before.ts";

let db: DatabaseBefore;
let client: pg.Client;

beforeAll(async () => {
  db = await databaseBefore("m22", (tag) => tag === "0022_time_partitions");
  client = db.client;
});

afterAll(async () => {
  await db?.drop();
});

it("keeps every row, each in its month (far-off ones in DEFAULT), and the keys still refuse duplicates", async () => {
  const org = "00000000-0000-4000-8000-000000000001";
  const dep = "00000000-0000-4000-8000-000000000002";
  const server = "00000000-0000-4000-8000-000000000003";
  // Lines of four months ago, of now, and dated far off by a wrong clock.
  const dates = ["now() - interval '4 months'", "now()", "'1970-01-01'::timestamptz", "'2199-01-01'::timestamptz"];
  for (const [i, ts] of dates.entries()) {
    await client.query(`insert into deployment_logs (organization_id, deployment_id, ts, level, message, step) values ($1, $2, ${ts}, 'info', $3, null)`, [org, dep, `line ${i}`]);
    await client.query(`insert into agent_events (server_id, seq, kind, ts, body) values ($1, $2, 'log', ${ts}, $3)`, [server, i + 1, JSON.stringify({ n: i })]);
  }
  const old = await client.query<{ id: string; tx: string; ts: Date }>("select id::text, tx::text, ts from deployment_logs order by id");

  await db.migrateRest();

  const kind = await client.query<{ relkind: string; relname: string }>("select relname, relkind from pg_class where relname in ('deployment_logs', 'agent_events') order by relname");
  expect(kind.rows).toEqual([
    { relname: "agent_events", relkind: "p" },
    { relname: "deployment_logs", relkind: "p" },
  ]);
  const now = await client.query<{ id: string; tx: string; ts: Date; part: string }>("select id::text, tx::text, ts, tableoid::regclass::text as part from deployment_logs order by id");
  expect(now.rows.map(({ id, tx, ts }) => ({ id, tx, ts }))).toEqual(old.rows);
  const ym = (d: Date) => `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, "0")}`;
  expect(now.rows.map((r) => r.part)).toEqual([`deployment_logs_p${ym(old.rows[0]!.ts)}`, `deployment_logs_p${ym(old.rows[1]!.ts)}`, "deployment_logs_default", "deployment_logs_default"]);

  // New ids continue the old sequence; the (id, ts) key holds.
  const next = await client.query<{ id: string }>("insert into deployment_logs (organization_id, deployment_id, ts, level, message, step) values ($1, $2, now(), 'info', 'after', null) returning id::text", [org, dep]);
  expect(BigInt(next.rows[0]!.id)).toBeGreaterThan(BigInt(old.rows.at(-1)!.id));

  const events = await client.query<{ seq: string; part: string }>("select seq::text, tableoid::regclass::text as part from agent_events order by seq");
  expect(events.rows.map((r) => r.seq)).toEqual(["1", "2", "3", "4"]);
  expect(events.rows[2]!.part).toBe("agent_events_default");
  // A resent event (same seq, same ts) is refused wherever it lives, DEFAULT included.
  for (const [i, ts] of dates.entries()) {
    const again = client.query(`insert into agent_events (server_id, seq, kind, ts, body) values ($1, $2, 'log', (select ts from agent_events where seq = $2), '{}')`, [server, i + 1]);
    await expect(again, ts).rejects.toMatchObject({ code: "23505" });
  }
  const { rows } = await client.query<{ n: number }>("select count(*)::int as n from agent_events");
  expect(rows[0]!.n).toBe(4);
});
