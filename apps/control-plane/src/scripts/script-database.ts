// The control plane's database for a command-line script: DATABASE_URL, or the embedded
// server `npm start` runs (started here, and stopped again, when no control plane runs),
// migrated to this version.
import pg from "pg";
import { createDb, embeddedUrl, runMigrations, startEmbeddedPostgres, type DbHandle } from "@berth/db";
import type { Config } from "../config.ts";
import { assertEmbeddedDataDir, embeddedPostgresDir } from "../db/embedded-data-dir.ts";

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

export async function openScriptDatabase(config: Config): Promise<{ handle: DbHandle; close(): Promise<void> }> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
    url = embeddedUrl(config.embeddedPgPort);
    if (!(await reachable(url))) {
      assertEmbeddedDataDir(config.dataDir);
      const server = await startEmbeddedPostgres({ dataDir: embeddedPostgresDir(config.dataDir), port: config.embeddedPgPort });
      url = server.url;
      stopEmbedded = () => server.stop();
    }
  }
  await runMigrations(url);
  const handle = createDb(url, { max: 2 });
  return {
    handle,
    async close() {
      await handle.close();
      await stopEmbedded?.();
    },
  };
}
