// A person in several organisations picks one with --org for lists and creates (without it:
// a usage error naming them, exit 2); finding one item by id looks in all of them.
import { expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { json, signedInPerson } from "../support/cli-people.ts";
import { cliSuite } from "../support/cli-suite.ts";

const s = cliSuite();

it("lists need --org when the person belongs to several organisations", async () => {
  const other = await createDemoOrganization(s.cp.database.db, s.cp.app.services);
  await s.cp.app.services.memberships.addToOrganization(other.organization_id, s.owner.userId, "owner");
  const run = await signedInPerson(s);

  const r = await run(["projects", "list"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("--org");
  expect(r.stderr).toContain(other.organization_id);

  const there = await json<{ id: string }[]>(run, ["projects", "list", "--org", other.organization_id]);
  expect(there.map((p) => p.id)).toEqual([other.project_id]);
  expect((await json<{ id: string }>(run, ["projects", "show", other.project_id])).id).toBe(other.project_id);
  expect((await json<{ id: string }>(run, ["environments", "show", s.d.environments.running])).id).toBe(s.d.environments.running);
});
