// `berth projects` with both kinds of credentials against a real control plane: list, show,
// create, update and delete, as JSON and as a table; the API's validation messages are shown
// with their code (exit 1); a delete without --yes and without a terminal is refused (exit 2).
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { json, signedInPerson, withApiKey, type Run } from "../support/cli-people.ts";

const s = cliSuite();

interface Project {
  id: string;
  name: string;
  default_branch: string | null;
  erp_version: string | null;
  git_repo_url: string | null;
}

describe.each([
  ["an API key", () => Promise.resolve(withApiKey(s, s.d.api_keys.org_rw))],
  ["a signed-in person", () => signedInPerson(s)],
])("with %s", (who, as) => {
  it("creates, lists, shows and updates a project", async () => {
    const run: Run = await as();
    const name = `CLI project (${who})`;
    const created = await json<Project>(run, ["projects", "create", "--name", name, "--server", s.d.server_id, "--erp-version", "17.0", "--branch", "develop"]);
    expect(created).toMatchObject({ name, erp_version: "17.0", default_branch: "develop" });

    const list = await json<Project[]>(run, ["projects", "list"]);
    expect(list.map((p) => p.id)).toEqual(expect.arrayContaining([s.d.project_id, created.id]));

    const table = await run(["projects", "list"]);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+ERP\s+BRANCH\s+ENVIRONMENTS\n/);
    expect(table.stdout).toContain(name);
    expect(table.stdout).not.toContain("\x1b[");

    const updated = await json<Project>(run, ["projects", "update", created.id, "--name", `${name} v2`, "--repo", "https://git.example.com/acme/addons.git"]);
    expect(updated).toMatchObject({ id: created.id, name: `${name} v2`, git_repo_url: "https://git.example.com/acme/addons.git" });
    expect(await json<Project>(run, ["projects", "show", created.id])).toMatchObject({ name: `${name} v2`, default_branch: "develop" });

    const shown = await run(["projects", "show", created.id]);
    expect(shown.stdout).toMatch(/^Name:\s+CLI project .* v2$/m);

    // Without a terminal and without --yes, nothing is deleted.
    const refused = await run(["projects", "delete", created.id]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("--yes");
    expect((await json<Project[]>(run, ["projects", "list"])).map((p) => p.id)).toContain(created.id);

    const deleted = await run(["projects", "delete", created.id, "--yes"]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect((await json<Project[]>(run, ["projects", "list"])).map((p) => p.id)).not.toContain(created.id);
  });

  it("sets the development settings: a server of the organisation and a limit, `none` turns them off; another organisation's server is refused", async () => {
    const run: Run = await as();
    const created = await json<Project>(run, ["projects", "create", "--name", `Development (${who})`, "--server", s.d.server_id]);
    const on = await json<Project & { development_server_id: string | null; development_limit: number }>(run, [
      "projects", "update", created.id, "--development-server", s.d.server_id, "--development-limit", "5",
    ]);
    expect(on).toMatchObject({ development_server_id: s.d.server_id, development_limit: 5 });
    const shown = await run(["projects", "show", created.id]);
    expect(shown.stdout).toMatch(new RegExp(`^Development server:\\s+${s.d.server_id}$`, "m"));
    expect(shown.stdout).toMatch(/^Development limit:\s+5$/m);

    const off = await json<Project & { development_server_id: string | null }>(run, ["projects", "update", created.id, "--development-server", "none"]);
    expect(off.development_server_id).toBeNull();

    const refused = await run(["projects", "update", created.id, "--development-server", randomUUID()]); // no server of this organisation
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("(development_server_invalid)");
    const notNumber = await run(["projects", "update", created.id, "--development-limit", "many"]);
    expect(notNumber.code).toBe(2);
    expect(notNumber.stderr).toContain("Not a whole number");
  });

  it("shows the API's validation error with its code and details: exit 1", async () => {
    const run: Run = await as();
    const r = await run(["projects", "create", "--name", "x".repeat(300), "--server", s.d.server_id]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("(validation_error)");
    expect(r.stderr).toContain("\n  body/name: must NOT have more than 255 characters");
  });
});

it("--json puts the error on stderr as JSON and nothing on stdout", async () => {
  const run = withApiKey(s, s.d.api_keys.org_ro);
  const r = await run(["projects", "create", "--name", "read-only", "--server", s.d.server_id, "--json"]);
  expect(r.code).toBe(1);
  expect(r.stdout).toBe("");
  expect(JSON.parse(r.stderr)).toMatchObject({ error: expect.any(String), message: expect.any(String) });
});
