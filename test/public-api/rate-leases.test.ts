// Budgets leased from the shared counter: however requests interleave across replicas,
// exactly `limit` are admitted in a window, and the counter never passes the limit.
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createLeaseMeter } from "../../apps/control-plane/src/modules/rate-limits/lease-meter.ts";
import { createRateLimitsRepo } from "../../apps/control-plane/src/modules/rate-limits/rate-limits.repo.ts";
import { countStatements } from "../support/counting-pool.ts";
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
  const queries = countStatements(counting);
  try {
    const meter = createLeaseMeter(createRateLimitsRepo(counting));
    for (let i = 0; i < 60; i++) await meter.hit("key:cheap", 1_000_020, 120, 1_000_080);
    expect(queries()).toBeLessThan(15);
  } finally {
    await counting.end();
  }
});

it("a new window's leases for many keys go out together, each answered on its own", async () => {
  const counting = new pg.Pool({ connectionString: db.url, max: 10 });
  const statements = countStatements(counting);
  try {
    // One key whose budget another replica has already spent in this window.
    await pools[0]!.query("insert into rate_limit_counters (bucket, window_start, count) values ('key:herd-spent', 1_000_020, 120)");
    const meter = createLeaseMeter(createRateLimitsRepo(counting));
    // 300 keys' first requests of the window, all at once, as when a window starts.
    const buckets = Array.from({ length: 300 }, (_, i) => `key:herd-${String(i).padStart(3, "0")}`);
    const meters = await Promise.all([...buckets, "key:herd-spent"].map((b) => meter.hit(b, 1_000_020, 120, 1_000_080)));
    expect(meters.slice(0, 300).every((m) => m.used === 1 && m.limit === 120)).toBe(true);
    expect(meters[300]!.used).toBeGreaterThan(120);
    // The first lease goes at once; the others wait for it and go together.
    expect(statements()).toBeLessThanOrEqual(6);
    const { rows } = await pools[0]!.query<{ n: number; total: number }>(
      "select count(*)::int as n, sum(count)::int as total from rate_limit_counters where bucket like 'key:herd-%' and bucket <> 'key:herd-spent'",
    );
    // Each key leased a quarter of its budget, once.
    expect(rows[0]).toEqual({ n: 300, total: 300 * 30 });
  } finally {
    await counting.end();
  }
});

it("replicas leasing the same keys in different orders admit exactly each limit and never deadlock", async () => {
  const meters = pools.map((p) => createLeaseMeter(createRateLimitsRepo(p)));
  const buckets = Array.from({ length: 40 }, (_, i) => `key:cross-${i}`);
  // Each replica walks the keys in its own order, so its statements hold several keys' rows
  // in an order of their own making unless the repository sorts them.
  const orders = [buckets, [...buckets].reverse(), buckets.map((_, i) => buckets[(i * 7) % buckets.length]!)];
  const hits = await Promise.all(
    meters.flatMap((meter, r) => Array.from({ length: 60 }, () => orders[r]!.map((b) => meter.hit(b, 1_000_020, 120, 1_000_080).then((m) => ({ b, admitted: m.used <= m.limit })))).flat()),
  );
  for (const b of buckets) expect(hits.filter((h) => h.b === b && h.admitted)).toHaveLength(120);
});
