// Budgets leased from the shared counter: however requests interleave across replicas,
// exactly `limit` are admitted in a window, and the counter never passes the limit.
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLeaseMeter } from "../../apps/control-plane/src/modules/rate-limits/lease-meter.ts";
import { createRateLimitsRepo } from "../../apps/control-plane/src/modules/rate-limits/rate-limits.repo.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

let db: TestDatabase;
let pools: pg.Pool[];

beforeAll(async () => {
  db = await createTestDatabase();
  pools = [new pg.Pool({ connectionString: db.url, max: 5 }), new pg.Pool({ connectionString: db.url, max: 5 }), new pg.Pool({ connectionString: db.url, max: 5 })];
});
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await db.drop();
});

it("three replicas hammering one budget admit exactly the limit, concurrently", async () => {
  const meters = pools.map((p) => createLeaseMeter(createRateLimitsRepo(p)));
  const limit = 120;
  const results = await Promise.all(
    // Every replica has more demand than the whole budget, so each spends all it leases.
    Array.from({ length: 600 }, (_, i) => meters[i % 3]!.hit("key:concurrent", 1_000_020, limit, 1_000_080)),
  );
  expect(results.filter((m) => m.used <= m.limit)).toHaveLength(limit);
  const { rows } = await pools[0]!.query("select count from rate_limit_counters where bucket = 'key:concurrent'");
  expect(rows[0].count).toBe(limit);
});

it("a single replica reports the exact remaining budget after every request", async () => {
  const meter = createLeaseMeter(createRateLimitsRepo(pools[0]!));
  for (let i = 1; i <= 20; i++) {
    const m = await meter.hit("key:single", 1_000_020, 20, 1_000_080);
    expect(m.used).toBe(i);
  }
  expect((await meter.hit("key:single", 1_000_020, 20, 1_000_080)).used).toBeGreaterThan(20);
  // A new window starts from zero.
  expect((await meter.hit("key:single", 1_000_080, 20, 1_000_140)).used).toBe(1);
});

it("spends far fewer round trips than requests while the budget is far from spent", async () => {
  const counting = new pg.Pool({ connectionString: db.url, max: 2 });
  let queries = 0;
  const query = counting.query.bind(counting);
  (counting as unknown as { query: typeof query }).query = ((...args: Parameters<typeof query>) => {
    queries++;
    return query(...args);
  }) as typeof query;
  try {
    const meter = createLeaseMeter(createRateLimitsRepo(counting));
    for (let i = 0; i < 60; i++) await meter.hit("key:cheap", 1_000_020, 120, 1_000_080);
    expect(queries).toBeLessThan(15);
  } finally {
    await counting.end();
  }
});
