// A control plane for the fuzz CLI outside vitest: its own database (embedded PostgreSQL, or a
// fresh database on DATABASE_URL's server), migrated, and a clock that follows real time
// unless the fuzzer moves it past a rate-limit window.
import { buildApp, manualClock } from "@berth/control-plane";
import { createDb, runMigrations } from "@berth/db";
import { startBenchDatabase } from "../bench/database.ts";
import type { App, Clock } from "@berth/control-plane";
import type { DbHandle } from "@berth/db";
export interface FuzzTarget { app: App; database: DbHandle; clock: Clock & { advance(ms: number): void } }

export async function startFuzzControlPlane(): Promise<FuzzTarget & { close(): Promise<void> }> {
  const pg = await startBenchDatabase();
  try {
    await runMigrations(pg.url);
    const database = createDb(pg.url, { max: 20 });
    const clock = manualClock(new Date());
    const realStart = Date.now();
    const base = clock.now().getTime();
    let offset = 0;
    const liveClock = Object.assign(clock, {
      now: () => new Date(base + (Date.now() - realStart) + offset),
      advance: (ms: number) => {
        offset += ms;
      },
    });
    const app = await buildApp({ database, clock: liveClock, masterKey: Buffer.alloc(32, 7), outboundAllow: [] });
    return {
      app,
      database,
      clock: liveClock,
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
