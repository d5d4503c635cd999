// The environment-stages migration on a database that already holds environments: per
// project, the active environment named production (any case), else the oldest active one,
// becomes production and every other one staging; a project with only destroyed
// environments has no production; the index then refuses a second production.
import type pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { databaseBefore, type DatabaseBefore } from "../support/migrations-before.ts";

let db: DatabaseBefore;
let client: pg.Client;

beforeAll(async () => {
  db = await databaseBefore("stages", (tag) => tag.endsWith("_environment_stages"));
  client = db.client;
});

afterAll(async () => {
  await db?.drop();
});

it("gives each project one production (the one named so, else the oldest active) and the others staging", async () => {
  const { rows: [org] } = await client.query<{ id: string }>("insert into organizations (name) values ('Acme') returning id");
  const project = async (n: string) => (await client.query<{ id: string }>("insert into projects (organization_id, name) values ($1, $2) returning id", [org!.id, n])).rows[0]!.id;
  const env = async (projectId: string, n: string, createdAt: string, active = true) =>
    (
      await client.query<{ id: string }>(
        "insert into environments (organization_id, project_id, name, git_branch, is_active, created_at) values ($1, $2, $3, 'main', $4, $5) returning id",
        [org!.id, projectId, n, active, createdAt],
      )
    ).rows[0]!.id;

  const named = await project("named");
  const namedStaging = await env(named, "staging", "2026-01-01T00:00:00Z");
  const namedProduction = await env(named, "Production", "2026-02-01T00:00:00Z");
  const oldest = await project("oldest");
  const destroyedFirst = await env(oldest, "first", "2025-12-01T00:00:00Z", false);
  const oldestActive = await env(oldest, "main", "2026-01-01T00:00:00Z");
  const newer = await env(oldest, "feature", "2026-03-01T00:00:00Z");
  const gone = await project("gone");
  const onlyDestroyed = await env(gone, "production", "2026-01-01T00:00:00Z", false);

  await db.migrateRest();

  const { rows } = await client.query<{ id: string; stage: string }>("select id, stage from environments");
  const stage = Object.fromEntries(rows.map((r) => [r.id, r.stage]));
  expect(stage).toEqual({
    [namedStaging]: "staging",
    [namedProduction]: "production",
    [destroyedFirst]: "staging",
    [oldestActive]: "production",
    [newer]: "staging",
    [onlyDestroyed]: "staging",
  });

  // The rules hold from now on: one production per project, and only the three stages.
  await expect(client.query("update environments set stage = 'production' where id = $1", [newer])).rejects.toMatchObject({ code: "23505" });
  await expect(client.query("update environments set stage = 'prod' where id = $1", [newer])).rejects.toMatchObject({ code: "23514" });
  await client.query("update environments set stage = 'production' where id = $1", [onlyDestroyed]);
});
