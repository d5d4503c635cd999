// api_keys.last_used_at, written behind the requests (modules/api-keys/key-touches.ts): the
// keys a replica saw used go together in one statement, a key at most once a minute,
// replicas writing the same keys in different orders never deadlock, and the time never goes
// backwards.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb, type DbHandle } from "@berth/db";
import { createApiKeysRepo } from "../../apps/control-plane/src/modules/api-keys/api-keys.repo.ts";
import { createKeyTouches } from "../../apps/control-plane/src/modules/api-keys/key-touches.ts";
import { countStatements } from "../support/counting-pool.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

let db: TestDatabase;
let replicas: DbHandle[];
let keyIds: string[];

beforeAll(async () => {
  db = await createTestDatabase();
  replicas = [createDb(db.url, { max: 5 }), createDb(db.url, { max: 5 }), createDb(db.url, { max: 5 })];
  const pool = replicas[0]!.pool;
  const org = (await pool.query<{ id: string }>("insert into organizations (name) values ('touch') returning id")).rows[0]!.id;
  const { rows } = await pool.query<{ id: string }>(
    `insert into api_keys (organization_id, access, name, display_prefix, key_hash)
     select $1, 'read_only', 'k' || i, 'svc_live_ro_' || i, md5(i::text) from generate_series(1, 40) i returning id`,
    [org],
  );
  keyIds = rows.map((r) => r.id);
});
afterAll(async () => {
  await Promise.all(replicas.map((r) => r.close()));
  await db.drop();
});

const usedAt = async (at: Date) =>
  (await replicas[0]!.pool.query<{ n: number }>("select count(*)::int as n from api_keys where last_used_at = $1", [at])).rows[0]!.n;

it("the keys used meanwhile are written together, in one statement, without anyone asking", async () => {
  const handle = createDb(db.url, { max: 10 });
  const statements = countStatements(handle.pool);
  try {
    const repo = createApiKeysRepo(handle.db);
    const touches = createKeyTouches({ write: repo.touchMany, flushMs: 200 });
    const at = new Date("2026-01-01T00:00:00Z");
    for (const id of keyIds) touches.touch(id, at);
    expect(statements()).toBe(0);
    await expect.poll(() => usedAt(at)).toBe(40);
    expect(statements()).toBe(1);
  } finally {
    await handle.close();
  }
});

it("a key is written at most once a minute; flush() writes what is gathered at once", async () => {
  const handle = createDb(db.url, { max: 2 });
  const statements = countStatements(handle.pool);
  try {
    const repo = createApiKeysRepo(handle.db);
    const touches = createKeyTouches({ write: repo.touchMany, flushMs: 60_000 });
    const first = new Date("2026-01-02T00:00:00Z");
    touches.touch(keyIds[0]!, first);
    touches.touch(keyIds[0]!, new Date(first.getTime() + 59_000));
    await touches.flush();
    expect(await usedAt(first)).toBe(1);
    const nextMinute = new Date(first.getTime() + 60_000);
    touches.touch(keyIds[0]!, nextMinute);
    await touches.flush();
    expect(await usedAt(nextMinute)).toBe(1);
    expect(statements()).toBe(2);
    // Nothing gathered: no statement.
    await touches.flush();
    expect(statements()).toBe(2);
  } finally {
    await handle.close();
  }
});

it("a failed write is reported and loses only its own touches", async () => {
  const handle = createDb(db.url, { max: 2 });
  try {
    const repo = createApiKeysRepo(handle.db);
    const errors: unknown[] = [];
    let fail = true;
    const touches = createKeyTouches({
      write: async (batch) => {
        if (fail) throw new Error("database down");
        await repo.touchMany(batch);
      },
      onError: (err) => errors.push(err),
    });
    const at = new Date("2026-01-03T00:00:00Z");
    touches.touch(keyIds[1]!, at);
    await touches.flush();
    expect(errors).toHaveLength(1);
    fail = false;
    touches.touch(keyIds[2]!, at);
    await touches.flush();
    expect(await usedAt(at)).toBe(1);
  } finally {
    await handle.close();
  }
});

it("replicas writing the same keys in different orders never deadlock, and the latest time stays", async () => {
  const repos = replicas.map((r) => createApiKeysRepo(r.db));
  const orders = [keyIds, [...keyIds].reverse(), keyIds.map((_, i) => keyIds[(i * 7) % keyIds.length]!)];
  const base = Date.parse("2026-02-01T00:00:00Z");
  await Promise.all(
    Array.from({ length: 20 }, (_, round) => repos.map((repo, r) => repo.touchMany(orders[r]!.map((id) => ({ id, at: new Date(base + round * 1000 + r) }))))).flat(),
  );
  expect(await usedAt(new Date(base + 19 * 1000 + 2))).toBe(40);
});
