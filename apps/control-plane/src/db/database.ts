// Where the database comes from: DATABASE_URL, or an embedded PostgreSQL kept in the data dir.
import { runMigrations, startEmbeddedPostgres } from "@berth/db";
import type { Config } from "../config.ts";
import { assertEmbeddedDataDir, embeddedPostgresDir } from "./embedded-data-dir.ts";

export async function resolveDatabase(config: Config, log: (msg: string) => void): Promise<{ url: string; stop: () => Promise<void> }> {
  let url = config.databaseUrl;
  let stop = async () => {};
  if (!url) {
    assertEmbeddedDataDir(config.dataDir);
    log(`starting embedded PostgreSQL (data in ${embeddedPostgresDir(config.dataDir)}, port ${config.embeddedPgPort})`);
    const server = await startEmbeddedPostgres({ dataDir: embeddedPostgresDir(config.dataDir), port: config.embeddedPgPort });
    url = server.url;
    stop = () => server.stop();
  }
  await runMigrations(url);
  return { url, stop };
}
