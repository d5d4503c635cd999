// A real control plane on a fresh database for one test file.
import { createDb, type DbHandle } from "@berth/db";
import { buildApp, manualClock, type App, type AppOptions } from "@berth/control-plane";
import { createTestDatabase } from "./database.ts";

export interface TestControlPlane {
  app: App;
  database: DbHandle;
  url: string;
  clock: ReturnType<typeof manualClock>;
  close(): Promise<void>;
  /** Stops the app and its pool but keeps the database, e.g. to restart on it. */
  stop(): Promise<void>;
}

/** Replicas of one test share a database, so they share this master key too. */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7);

export async function startControlPlane(
  opts: { listen?: boolean; url?: string; port?: number; heartbeatMs?: number; outboxSweepMs?: number } & Pick<AppOptions, "outboundAllow" | "outboundResolver" | "jobs" | "streamCaps" | "agentLimits" | "trustProxy" | "logger"> = {},
): Promise<TestControlPlane> {
  const testDb = opts.url ? undefined : await createTestDatabase();
  const url = opts.url ?? testDb!.url;
  const database = createDb(url, { max: 20 });
  const clock = manualClock(new Date());
  // The clock follows real time unless a test moves it.
  const realStart = Date.now();
  const base = clock.now().getTime();
  let offset = 0;
  const liveClock = Object.assign(clock, {
    now: () => new Date(base + (Date.now() - realStart) + offset),
    advance: (ms: number) => {
      offset += ms;
    },
  });
  const app = await buildApp({ database, clock: liveClock, masterKey: TEST_MASTER_KEY, ...(opts.logger ? { logger: opts.logger } : process.env.BERTH_TEST_LOG ? { logger: { level: process.env.BERTH_TEST_LOG } } : {}), ...(opts.streamCaps ? { streamCaps: opts.streamCaps } : {}), ...(opts.agentLimits ? { agentLimits: opts.agentLimits } : {}), ...(opts.trustProxy !== undefined ? { trustProxy: opts.trustProxy } : {}), ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}), ...(opts.outboxSweepMs ? { outboxSweepMs: opts.outboxSweepMs } : {}), outboundAllow: opts.outboundAllow ?? [], ...(opts.outboundResolver ? { outboundResolver: opts.outboundResolver } : {}), ...(opts.jobs ? { jobs: opts.jobs } : {}) });
  let stopped = false;
  if (opts.listen || opts.port !== undefined) await app.listen({ port: opts.port ?? 0, host: "127.0.0.1" });
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await app.close();
    await database.close();
  };
  return {
    app,
    database,
    url,
    clock: liveClock,
    stop,
    async close() {
      await stop();
      await testDb?.drop();
    },
  };
}
