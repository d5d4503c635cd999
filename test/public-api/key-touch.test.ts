// api_keys.last_used_at, written for the keys a replica saw used: the touches that come due
// together go in one statement, replicas touching the same keys in different orders never
// deadlock, and the time never goes backwards.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createDb, type DbHandle } from "@berth/db";
import { createApiKeysRepo } from "../../apps/control-plane/src/modules/api-keys/api-keys.repo.ts";
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

it("touches that come due together go in one statement or a few", async () => {
  const handle = createDb(db.url, { max: 10 });
  const statements = countStatements(handle.pool);
  try {
    const repo = createApiKeysRepo(handle.db);
    const at = new Date("2026-01-01T00:00:00Z");
    await Promise.all(keyIds.map((id) => repo.touch(id, at)));
    expect(statements()).toBeLessThanOrEqual(2);
    const { rows } = await handle.pool.query<{ n: number }>("select count(*)::int as n from api_keys where last_used_at = $1", [at]);
    expect(rows[0]!.n).toBe(40);
  } finally {
    await handle.close();
  }
});

it("replicas touching the same keys in different orders never deadlock, and the latest time stays", async () => {
  const repos = replicas.map((r) => createApiKeysRepo(r.db));
  const orders = [keyIds, [...keyIds].reverse(), keyIds.map((_, i) => keyIds[(i * 7) % keyIds.length]!)];
  const base = Date.parse("2026-02-01T00:00:00Z");
  await Promise.all(
    Array.from({ length: 20 }, (_, round) => repos.flatMap((repo, r) => orders[r]!.map((id) => repo.touch(id, new Date(base + round * 1000 + r))))).flat(),
  );
  const { rows } = await replicas[0]!.pool.query<{ n: number }>("select count(*)::int as n from api_keys where last_used_at = $1", [new Date(base + 19 * 1000 + 2)]);
  expect(rows[0]!.n).toBe(40);
});
