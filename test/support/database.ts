// A fresh, migrated database for one test file, cloned from the run's template.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("pgAdminUrl");
  const template = inject("pgTemplateDb");
  const name = `berth_t_${randomUUID().replaceAll("-", "").slice(0, 16)}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}" template "${template}"`);
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(adminUrl, name),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists "${name}" with (force)`).catch(() => {});
      await c.end();
    },
  };
}
