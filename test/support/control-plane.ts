// A real control plane on a fresh database for one test file.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createDb, type DbHandle } from "@berth/db";
import { buildApp, createObjectStore, type App, type AppOptions } from "@berth/control-plane";
import { liveClock, type LiveClock } from "./live-clock.ts";
import { createTestDatabase } from "./database.ts";

export interface TestControlPlane {
  app: App;
  database: DbHandle;
  url: string;
  clock: LiveClock;
  /** The folder of its backup store (a temp folder of its own, removed by close), unless the test gave a store. */
  backupDir: string;
  close(): Promise<void>;
  /** Stops the app and its pool but keeps the database, e.g. to restart on it. */
  stop(): Promise<void>;
}

/** Replicas of one test share a database, so they share this master key too. */
export const TEST_MASTER_KEY = Buffer.alloc(32, 7);

export async function startControlPlane(
  opts: { listen?: boolean; url?: string; port?: number; heartbeatMs?: number; outboxSweepMs?: number } & Pick<AppOptions, "outboundAllow" | "outboundResolver" | "jobs" | "streamCaps" | "agentLimits" | "trustProxy" | "logger" | "metrics" | "mail" | "registration" | "baseDomain" | "dnsServers" | "proxy" | "backupStore" | "analyzeBackup" | "migrationImport" | "migrationTiers" | "migrationQuotaBytes" | "schemas"> = {},
): Promise<TestControlPlane> {
  const testDb = opts.url ? undefined : await createTestDatabase();
  const url = opts.url ?? testDb!.url;
  const database = createDb(url, { max: 20 });
  const { listen, url: _url, port, ...appOptions } = opts;
  const clock = liveClock();
  const backupDir = mkdtempSync(path.join(os.tmpdir(), "berth-cp-backups-"));
  // Resumable migration uploads are assembled beside the store, in the test's own folder.
  const migrationUploadDir = mkdtempSync(path.join(os.tmpdir(), "berth-cp-uploads-"));
  const app = await buildApp({
    database,
    clock,
    masterKey: TEST_MASTER_KEY,
    outboundAllow: [],
    ...(process.env.BERTH_TEST_LOG ? { logger: { level: process.env.BERTH_TEST_LOG } } : {}),
    backupStore: createObjectStore({ kind: "local", dir: backupDir }),
    migrationUploadDir,
    // Each test calls a few routes: compile their schemas then, not all of them at start.
    schemas: "on-first-use",
    ...appOptions,
  });
  let stopped = false;
  if (listen || port !== undefined) await app.listen({ port: port ?? 0, host: "127.0.0.1" });
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
    clock,
    backupDir,
    stop,
    async close() {
      await stop();
      await testDb?.drop();
      rmSync(backupDir, { recursive: true, force: true });
      rmSync(migrationUploadDir, { recursive: true, force: true });
    },
  };
}

/**
 * Moves the control plane's clock to the start of a fixed one-minute rate-limit window, so a
 * burst of requests a test counts stays inside one window however slowly the machine runs.
 */
export function startOfRateWindow(cp: Pick<TestControlPlane, "clock">): void {
  const now = cp.clock.now().getTime();
  cp.clock.advance(60_000 - (now % 60_000) + 1);
}
