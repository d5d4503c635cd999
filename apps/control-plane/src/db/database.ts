// Where the database comes from: DATABASE_URL, or an embedded PostgreSQL kept in the data dir.
import path from "node:path";
import { runMigrations, startEmbeddedPostgres } from "@berth/db";
import type { Config } from "../config.ts";

export async function resolveDatabase(config: Config, log: (msg: string) => void): Promise<{ url: string; stop: () => Promise<void> }> {
  let url = config.databaseUrl;
  let stop = async () => {};
  if (!url) {
    log(`starting embedded PostgreSQL (data in ${path.join(config.dataDir, "postgres")}, port ${config.embeddedPgPort})`);
    const server = await startEmbeddedPostgres({ dataDir: path.join(config.dataDir, "postgres"), port: config.embeddedPgPort });
    url = server.url;
    stop = () => server.stop();
  }
  await runMigrations(url);
  return { url, stop };
}
