// `berth environments` with both kinds of credentials against a real control plane: create with
// branch, sizes and domain; list, show, update; sizes checked locally for syntax only; what only
// the platform API changes is refused with an API key before any request.
import { describe, expect, it } from "vitest";
import { cliSuite } from "../support/cli-suite.ts";
import { json, signedInPerson, withApiKey, type Run } from "../support/cli-people.ts";

const s = cliSuite();

interface Environment {
  id: string;
  name: string;
  project_id: string;
  git_branch: string;
  domain: string | null;
  aliases: string[];
  auto_deploy: boolean;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
}

describe.each([
  ["an API key", "key", () => Promise.resolve(withApiKey(s, s.d.api_keys.org_rw))],
  ["a signed-in person", "person", () => signedInPerson(s)],
])("with %s", (_who, tag, as) => {
  it("creates an environment with branch, sizes and domain, then lists, shows and updates it", async () => {
    const run: Run = await as();
    const domain = `cli-${tag}.example.test`;
    const created = await json<Environment>(run, [
      "environments", "create", "--project", s.d.project_id, "--name", `cli-${tag}`, "--branch", "feature-x",
      "--cpu", "2", "--ram", "3072", "--disk", "25", "--domain", domain,
    ]);
    expect(created).toMatchObject({ name: `cli-${tag}`, project_id: s.d.project_id, git_branch: "feature-x", cpu_cores: 2, ram_mb: 3072, disk_gb: 25, domain });

    const listed = await json<Environment[]>(run, ["environments", "list", "--project", s.d.project_id]);
    expect(listed.map((e) => e.id)).toEqual(expect.arrayContaining([created.id, s.d.environments.running, s.d.environments.stopped]));
    expect(listed.every((e) => e.project_id === s.d.project_id)).toBe(true);
    expect((await json<Environment[]>(run, ["environments", "list"])).map((e) => e.id)).toContain(created.id);

    const updated = await json<Environment>(run, ["environments", "update", created.id, "--domain", `new-${domain}`, "--alias", `www.new-${domain}`]);
    expect(updated).toMatchObject({ id: created.id, domain: `new-${domain}`, aliases: [`www.new-${domain}`] });
    expect(await json<Environment>(run, ["environments", "show", created.id])).toMatchObject({ id: created.id, domain: `new-${domain}`, ram_mb: 3072 });

    const shown = await run(["environments", "show", created.id]);
    expect(shown.stdout).toMatch(/^Size:\s+2 cores, 3072 MB RAM, 25 GB disk$/m);

    const resized = await json<Environment>(run, ["environments", "update", created.id, "--cpu", "3", "--ram", "6144"]);
    expect(resized).toMatchObject({ id: created.id, cpu_cores: 3, ram_mb: 6144, disk_gb: 25, domain: `new-${domain}` });
    const tooSmall = await run(["environments", "update", created.id, "--ram", "100"]);
    expect(tooSmall.code).toBe(1);
    expect(tooSmall.stderr).toContain("body/ram_mb: must be >= 256");
  });

  it("a size that is not a number is a usage error before any request: exit 2", async () => {
    const run: Run = await as();
    const r = await run(["environments", "create", "--project", s.d.project_id, "--name", "x", "--cpu", "two"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Not a whole number");
  });

  it("a delete without --yes and without a terminal is refused: exit 2, the environment stays", async () => {
    const run: Run = await as();
    const r = await run(["environments", "delete", s.d.environments.stopped]);
    expect(r.code).toBe(2);
    expect((await json<Environment>(run, ["environments", "show", s.d.environments.stopped])).id).toBe(s.d.environments.stopped);
  });
});

it("a person changes the branch and auto-deploy; an API key may not (exit 2, unchanged)", async () => {
  const person = await signedInPerson(s);
  const env = s.d.environments.stopped;
  const changed = await json<Environment>(person, ["environments", "update", env, "--branch", "release", "--auto-deploy"]);
  expect(changed).toMatchObject({ git_branch: "release", auto_deploy: true });

  const key = withApiKey(s, s.d.api_keys.org_rw);
  const r = await key(["environments", "update", env, "--branch", "main"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("the branch and auto-deploy cannot be changed");
  expect(await json<Environment>(key, ["environments", "show", env])).toMatchObject({ git_branch: "release" });
});

it("the API's refusal of a domain is shown with its code: exit 1", async () => {
  const r = await withApiKey(s, s.d.api_keys.org_rw)(["environments", "update", s.d.environments.running, "--domain", "not a domain"]);
  expect(r.code).toBe(1);
  expect(r.stderr).toContain("(invalid_domain)");
});
