// `berth environments` and stages, with both kinds of credentials against a real control
// plane: --stage at creation (and its default), the stage in list and show, set-stage between
// staging and development, promote with --previous-stage; the API's refusals with their code.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { json, signedInPerson, withApiKey, type Run } from "../support/cli-people.ts";

const s = cliSuite();

interface Environment {
  id: string;
  name: string;
  stage: string;
}

describe.each([
  ["an API key", () => Promise.resolve(withApiKey(s, s.d.api_keys.org_rw))],
  ["a signed-in person", () => signedInPerson(s)],
])("with %s", (_who, as) => {
  it("creates with a stage, shows it, moves staging to development and promotes", { timeout: 60_000 }, async () => {
    const run: Run = await as();
    const scope = { organizationId: s.d.organization_id, projectId: null };
    const project = (await s.cp.app.services.projects.create(scope, { name: `stages-${randomUUID().slice(0, 8)}`, server_id: s.d.server_id })).id;

    const main = await json<Environment>(run, ["environments", "create", "--project", project, "--name", "main"]);
    expect(main.stage).toBe("production");
    const qa = await json<Environment>(run, ["environments", "create", "--project", project, "--name", "qa", "--stage", "staging"]);
    expect(qa.stage).toBe("staging");
    const second = await run(["environments", "create", "--project", project, "--name", "prod2", "--stage", "production"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain("(production_exists)");
    expect(second.stderr).toContain(`"main" (${main.id})`);
    const typo = await run(["environments", "create", "--project", project, "--name", "x", "--stage", "prod"]);
    expect(typo.code).toBe(2);

    const table = await run(["environments", "list", "--project", project]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/^ID\s+NAME\s+PROJECT\s+STATUS\s+STAGE\s/m);
    expect(table.stdout).toMatch(new RegExp(`^${qa.id}\\s+qa\\s+${project}\\s+pending\\s+staging\\s`, "m"));
    expect((await run(["environments", "show", main.id])).stdout).toMatch(/^Stage:\s+production$/m);

    expect((await json<Environment>(run, ["environments", "set-stage", qa.id, "development"])).stage).toBe("development");
    const toProduction = await run(["environments", "set-stage", qa.id, "production"]);
    expect(toProduction.code).toBe(2);

    const withoutPrevious = await run(["environments", "promote", qa.id]);
    expect(withoutPrevious.code).toBe(1);
    expect(withoutPrevious.stderr).toContain("(previous_stage_required)");
    const promoted = await run(["environments", "promote", qa.id, "--previous-stage", "staging"]);
    expect(promoted.code, promoted.stderr).toBe(0);
    expect(promoted.stdout.trim()).toBe("qa is the production environment of its project; main became staging.");
    expect((await json<Environment>(run, ["environments", "show", main.id])).stage).toBe("staging");
    const again = await json<{ environment: Environment; previous: unknown }>(run, ["environments", "promote", qa.id]);
    expect(again).toMatchObject({ environment: { id: qa.id, stage: "production" }, previous: null });
  });

  it("creates staging on another server, sets refresh on push and passing tests, and shows them", { timeout: 60_000 }, async () => {
    const run: Run = await as();
    const scope = { organizationId: s.d.organization_id, projectId: null };
    const project = (await s.cp.app.services.projects.create(scope, { name: `staging-${randomUUID().slice(0, 8)}`, server_id: s.d.server_id })).id;
    const { rows } = await s.cp.database.pool.query<{ id: string }>(
      "insert into servers (organization_id, name, provider, region, hostname, cpu_cores, ram_mb, disk_gb) values ($1, $2, 'hetzner', 'fsn1', 'staging.example.com', 2, 4096, 40) returning id",
      [s.d.organization_id, `staging-${randomUUID().slice(0, 8)}`],
    );
    const staging = await json<Environment & { server_id: string; refresh_on_push: boolean; require_passing_tests: boolean }>(run, [
      "environments", "create", "--project", project, "--name", "qa", "--stage", "staging", "--server", rows[0]!.id,
    ]);
    expect(staging).toMatchObject({ stage: "staging", server_id: rows[0]!.id, refresh_on_push: false });

    const on = await json<{ refresh_on_push: boolean; require_passing_tests: boolean }>(run, ["environments", "update", staging.id, "--refresh-on-push", "--require-passing-tests"]);
    expect(on).toMatchObject({ refresh_on_push: true, require_passing_tests: true });
    const shown = await run(["environments", "show", staging.id]);
    expect(shown.stdout).toMatch(/^Refresh on push:\s+on \(production's data before each pushed commit\)$/m);
    expect(shown.stdout).toMatch(/^Require passing tests:\s+on$/m);
    expect((await json<{ refresh_on_push: boolean }>(run, ["environments", "update", staging.id, "--no-refresh-on-push"])).refresh_on_push).toBe(false);

    const elsewhere = await run(["environments", "create", "--project", project, "--name", "x", "--server", randomUUID()]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain("(server_not_found)");
  });
});
