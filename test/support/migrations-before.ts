// A database as it was before one migration, for tests of what that migration does to rows
// that exist: a fresh database migrated with a copy of the migrations folder cut before it.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import pg from "pg";
import { inject } from "vitest";
import { ensureDatabase, MIGRATIONS_DIR } from "@berth/db";

/** The migrations folder without the first migration whose tag `isTag` names, and all after it. */
function migrationsBefore(isTag: (tag: string) => boolean): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "berth-migrations-"));
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const journalFile = path.join(dir, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  const at = journal.entries.findIndex((e) => isTag(e.tag));
  if (at <= 0) throw new Error("no such migration after the first one");
  for (const e of journal.entries.slice(at)) rmSync(path.join(dir, `${e.tag}.sql`));
  journal.entries = journal.entries.slice(0, at);
  writeFileSync(journalFile, JSON.stringify(journal));
  return dir;
}

export interface DatabaseBefore {
  client: pg.Client;
  /** Runs the remaining migrations (the one under test included). */
  migrateRest(): Promise<void>;
  /** Disconnects, drops the database and the folder copy. */
  drop(): Promise<void>;
}

/** A new database (named after `label`) migrated up to just before the migration `isTag` names. */
export async function databaseBefore(label: string, isTag: (tag: string) => boolean): Promise<DatabaseBefore> {
  const adminUrl = inject("pgAdminUrl");
  const name = `berth_t_${label}_${process.pid}_${Date.now()}`;
  await ensureDatabase(adminUrl, name);
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  const before = migrationsBefore(isTag);
  await migrate(drizzle(client), { migrationsFolder: before });
  return {
    client,
    migrateRest: () => migrate(drizzle(client), { migrationsFolder: MIGRATIONS_DIR }),
    async drop() {
      await client.end();
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await admin.end();
      }
      rmSync(before, { recursive: true, force: true });
    },
  };
}
