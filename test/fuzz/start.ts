// A control plane for the fuzz CLI outside vitest: its own database (embedded PostgreSQL, or a
// fresh database on DATABASE_URL's server), migrated, and a clock that follows real time
// unless the fuzzer moves it past a rate-limit window.
import { buildApp } from "@berth/control-plane";
import { liveClock, type LiveClock } from "../support/live-clock.ts";
import { createDb, runMigrations } from "@berth/db";
import { startBenchDatabase } from "../bench/database.ts";
import type { App } from "@berth/control-plane";
import type { DbHandle } from "@berth/db";
export interface FuzzTarget {
  app: App;
  database: DbHandle;
  clock: LiveClock;
}

export async function startFuzzControlPlane(): Promise<FuzzTarget & { close(): Promise<void> }> {
  const pg = await startBenchDatabase();
  try {
    await runMigrations(pg.url);
    const database = createDb(pg.url, { max: 20 });
    const clock = liveClock();
    const app = await buildApp({ database, clock, masterKey: Buffer.alloc(32, 7), outboundAllow: [] });
    return {
      app,
      database,
      clock,
      async close() {
        await app.close();
        await database.close();
        await pg.stop();
      },
    };
  } catch (err) {
    await pg.stop();
    throw err;
  }
}
