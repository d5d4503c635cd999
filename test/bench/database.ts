// The benchmark's own database: a fresh one in DATABASE_URL's server when set (so a tuned
// server can be measured), else an embedded PostgreSQL in a temp dir that is removed after.
import { randomUUID } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { ensureDatabase, startEmbeddedPostgres } from "@berth/db";
import { freePort } from "../setup/global-setup.ts";

export interface BenchDatabase {
  url: string;
  /** Where it runs, for the report. */
  description: string;
  /** Runs on this machine, so its processes can be looked up in /proc. */
  local: boolean;
  /** The embedded server's data directory (its postmaster.pid names the server's process); null on DATABASE_URL. */
  dataDir: string | null;
  stop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function startBenchDatabase(): Promise<BenchDatabase> {
  const external = process.env.DATABASE_URL;
  if (external) {
    const adminUrl = withDatabase(external, "postgres");
    const name = `berth_bench_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
    await ensureDatabase(adminUrl, name);
    return {
      url: withDatabase(external, name),
      description: `database ${name} on DATABASE_URL's server (dropped afterwards)`,
      local: false,
      dataDir: null,
      async stop() {
        const admin = new pg.Client({ connectionString: adminUrl });
        await admin.connect();
        try {
          await admin.query(`drop database if exists "${name}" with (force)`);
        } finally {
          await admin.end();
        }
      },
    };
  }

  const dir = await mkdtemp(path.join(os.tmpdir(), "berth-bench-pg-"));
  try {
    await chmod(dir, 0o755); // PostgreSQL runs as its own user when we are root.
    const server = await startEmbeddedPostgres({ dataDir: path.join(dir, "data"), port: await freePort(), database: "berth_bench" });
    return {
      url: server.url,
      description: `embedded PostgreSQL in ${dir} (default settings, removed afterwards)`,
      local: true,
      dataDir: path.join(dir, "data"),
      async stop() {
        try {
          await server.stop();
        } finally {
          await rm(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
