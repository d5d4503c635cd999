// Environment variables (issue 15): set, list (masked), update and delete in both APIs;
// names, reserved names and limits refused with stable codes; values sealed at rest and
// never shown again; delivered in the signed deploy command; part of the configuration a
// deployment records, so a retry or rollback sends the variables of its target.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { logLines } from "../support/log-lines.ts";
import { addPerson } from "../support/people.ts";
import { freshOrganization } from "./fixtures.ts";
import { openedCommand } from "../support/stored-commands.ts";

let cp: TestControlPlane;
const log = logLines();
beforeAll(async () => {
  cp = await startControlPlane({ logger: { level: "debug", stream: log.stream } });
});
afterAll(async () => cp?.close());

const SECRET = "s3cr3t-value-that-must-not-leak";
const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;

/** The env of the signed command that carries an operation. */
async function commandEnv(deploymentId: string): Promise<Record<string, string>> {
  const [row] = await q("select sealed, signed from agent_commands where deployment_id = $1", [deploymentId]);
  expect(row, "a command was issued").toBeDefined();
  return openedCommand(row).params.env as Record<string, string>;
}

describe("the public API", () => {
  it("sets, lists masked, updates and deletes; values are sealed at rest and reach the deploy command", async () => {
    const { d, rw, ro } = await freshOrganization(cp);
    const env = d.environments.running;
    const base = `/environments/${env}/variables`;

    expect((await rw.get(base)).body).toEqual({ variables: [], total: 0 });
    const created = await rw.put(`${base}/API_TOKEN`, { value: SECRET });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toEqual({ name: "API_TOKEN", value_masked: "••••", updated_at: expect.any(String) });
    cp.clock.advance(1000);
    const updated = await rw.put(`${base}/API_TOKEN`, { value: `${SECRET}-2` });
    expect(updated.status).toBe(200);
    expect(updated.body.updated_at > created.body.updated_at).toBe(true);
    expect((await rw.put(`${base}/TZ`, { value: "Europe/Brussels" })).status).toBe(201);

    const listed = await ro.get(base);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      variables: [
        { name: "API_TOKEN", value_masked: "••••", updated_at: updated.body.updated_at },
        { name: "TZ", value_masked: "••••", updated_at: expect.any(String) },
      ],
      total: 2,
    });
    expect(JSON.stringify(listed.body)).not.toContain(SECRET);

    // At rest: the column holds sealed values only.
    const [row] = await q("select variables::text as text from environments where id = $1", [env]);
    expect(row.text).toContain("API_TOKEN");
    expect(row.text).not.toContain(SECRET);
    expect(row.text).not.toContain("Europe/Brussels");

    // A read-only key cannot write.
    expect((await ro.put(`${base}/OTHER`, { value: "x" })).body.error).toBe("read_only_key");
    expect((await ro.delete(`${base}/TZ`)).body.error).toBe("read_only_key");

    // The deploy command carries them in clear (signed, to the agent only); the deployment's record does not.
    const deploy = await rw.post(`/environments/${env}/deploy`);
    expect(deploy.status, JSON.stringify(deploy.body)).toBe(202);
    expect(await commandEnv(deploy.body.task_id)).toEqual({ API_TOKEN: `${SECRET}-2`, TZ: "Europe/Brussels" });
    const [dep] = await q("select extra_data::text as text from deployments where id = $1", [deploy.body.task_id]);
    expect(dep.text).toContain("API_TOKEN");
    expect(dep.text).not.toContain(SECRET);

    const deleted = await rw.delete(`${base}/TZ`);
    expect(deleted.status).toBe(204);
    expect((await rw.delete(`${base}/TZ`)).status).toBe(404);
    expect((await rw.get(base)).body.variables.map((v: { name: string }) => v.name)).toEqual(["API_TOKEN"]);
  });

  it("replaces the whole set with PUT on the collection", async () => {
    const { d, rw } = await freshOrganization(cp);
    const base = `/environments/${d.environments.stopped}/variables`;
    await rw.put(`${base}/OLD`, { value: "1" });
    const replaced = await rw.put(base, { variables: { A: "1", B_2: "two" } });
    expect(replaced.status, JSON.stringify(replaced.body)).toBe(200);
    expect(replaced.body.variables.map((v: { name: string }) => v.name)).toEqual(["A", "B_2"]);
    expect(replaced.body.total).toBe(2);
    expect((await rw.put(base, { variables: { PORT: "1" } })).body.error).toBe("variable_reserved");
    expect((await rw.get(base)).body.total).toBe(2);
    expect((await rw.put(base, { variables: {} })).body).toEqual({ variables: [], total: 0 });
  });

  it("refuses bad names, reserved names, large values and too many variables with stable codes", async () => {
    const { d, rw } = await freshOrganization(cp);
    const base = `/environments/${d.environments.stopped}/variables`;
    for (const name of ["1BAD", "WITH-DASH", "A.B"]) {
      const res = await rw.put(`${base}/${name}`, { value: "v" });
      expect(res.status, name).toBe(400);
      expect(res.body.error, name).toBe("variable_name_invalid");
    }
    for (const name of ["HOST", "PORT", "USER", "PASSWORD", "password", "BERTH_ANYTHING", "PGPASSWORD"]) {
      const res = await rw.put(`${base}/${name}`, { value: "v" });
      expect(res.status, name).toBe(400);
      expect(res.body.error, name).toBe("variable_reserved");
    }
    // Too long: in a path the router refuses it; in a body the rule does.
    expect((await rw.put(`${base}/${"x".repeat(101)}`, { value: "v" })).body.error).toBe("validation_error");
    expect((await rw.put(base, { variables: { ["x".repeat(256)]: "v" } })).body.error).toBe("variable_name_invalid");
    const big = await rw.put(`${base}/BIG`, { value: "é".repeat(16 * 1024 + 1) });
    expect(big.status).toBe(400);
    expect(big.body.error).toBe("variable_value_too_large");
    expect((await rw.put(`${base}/JUST_FITS`, { value: "x".repeat(32 * 1024) })).status).toBe(201);
    expect((await rw.put(`${base}/NO_VALUE`, {})).body.error).toBe("validation_error");

    const hundred = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`V${i}`, "x"]));
    expect((await rw.put(base, { variables: hundred })).status).toBe(200);
    const over = await rw.put(`${base}/ONE_MORE`, { value: "x" });
    expect(over.status).toBe(409);
    expect(over.body.error).toBe("variable_limit_reached");
    expect((await rw.put(`${base}/V0`, { value: "updated" })).status).toBe(200);
    expect((await rw.put(base, { variables: { ...hundred, V100: "x" } })).body.error).toBe("variable_limit_reached");
  });

  it("answers 404 for another organisation's environment and changes nothing there", async () => {
    const a = await freshOrganization(cp);
    const b = await freshOrganization(cp);
    const base = `/environments/${a.d.environments.running}/variables`;
    await a.rw.put(`${base}/MINE`, { value: SECRET });
    expect((await b.rw.get(base)).status).toBe(404);
    expect((await b.rw.put(`${base}/MINE`, { value: "theirs" })).status).toBe(404);
    expect((await b.rw.put(base, { variables: {} })).status).toBe(404);
    expect((await b.rw.delete(`${base}/MINE`)).status).toBe(404);
    expect((await a.rw.get(base)).body.total).toBe(1);
  });
});

describe("the platform API", () => {
  it("manages variables under the project's environment for project admins; members are refused", async () => {
    const { d } = await freshOrganization(cp);
    const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const member = await addPerson(cp.app, "project_member", { organizationId: d.organization_id, projectId: d.project_id });
    const base = `/projects/${d.project_id}/environments/${d.environments.running}/variables`;

    const set = await admin.api.put(`${base}/SMTP_PASSWORD`, { value: SECRET });
    expect(set.status, JSON.stringify(set.body)).toBe(201);
    expect(set.body).toMatchObject({ name: "SMTP_PASSWORD", value_masked: "••••" });
    expect((await admin.api.get(base)).body).toEqual({ variables: [{ name: "SMTP_PASSWORD", value_masked: "••••", updated_at: set.body.updated_at }], total: 1 });
    expect((await admin.api.put(`${base}/USER`, { value: "x" })).body.error).toBe("variable_reserved");

    for (const res of [await member.api.get(base), await member.api.put(`${base}/X`, { value: "1" }), await member.api.delete(`${base}/SMTP_PASSWORD`)]) {
      expect(res.status).toBe(403);
    }
    const outsider = await addPerson(cp.app, "outsider", { organizationId: d.organization_id });
    expect((await outsider.api.get(base)).status).toBe(404);

    expect((await admin.api.delete(`${base}/SMTP_PASSWORD`)).status).toBe(204);
    expect((await admin.api.get(base)).body.total).toBe(0);
  });

  it("a retry and a rollback send the variables of their target deployment, not today's", async () => {
    const { d, rw } = await freshOrganization(cp);
    const admin = await addPerson(cp.app, "project_admin", { organizationId: d.organization_id, projectId: d.project_id });
    const env = d.environments.running;
    const base = `/environments/${env}/variables`;
    const finish = (id: string, status: string) => q("update deployments set status = $2, started_at = now(), completed_at = now() where id = $1", [id, status]);
    const deploy = async () => {
      const res = await admin.api.post("/deployments", { project_id: d.project_id, environment_id: env, git_branch: "main" });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body as { id: string; extra_data: { config: { variables: string[] } } };
    };

    await rw.put(`${base}/RELEASE`, { value: "one" });
    await rw.put(`${base}/ONLY_IN_ONE`, { value: "gone later" });
    const good = await deploy();
    expect(good.extra_data.config.variables).toEqual(["ONLY_IN_ONE", "RELEASE"]);
    expect(await commandEnv(good.id)).toEqual({ RELEASE: "one", ONLY_IN_ONE: "gone later" });
    await finish(good.id, "success");

    await rw.put(base, { variables: { RELEASE: "two", NEW_ONE: "new" } });
    const bad = await deploy();
    expect(await commandEnv(bad.id)).toEqual({ RELEASE: "two", NEW_ONE: "new" });
    await finish(bad.id, "failed");

    // Variables change again after the failure: the retry still sends those the failed deployment ran with.
    await rw.put(`${base}/RELEASE`, { value: "three" });
    const retry = await admin.api.post(`/deployments/${bad.id}/retry`);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(await commandEnv(retry.body.id)).toEqual({ RELEASE: "two", NEW_ONE: "new" });
    await finish(retry.body.id, "failed");

    const rollback = await admin.api.post(`/deployments/${good.id}/rollback`);
    expect(rollback.status, JSON.stringify(rollback.body)).toBe(200);
    expect(rollback.body.extra_data.config.variables).toEqual(["ONLY_IN_ONE", "RELEASE"]);
    expect(await commandEnv(rollback.body.id)).toEqual({ RELEASE: "one", ONLY_IN_ONE: "gone later" });
    expect(JSON.stringify(rollback.body)).not.toContain("gone later");
    await finish(rollback.body.id, "success");

    // A plain deploy takes today's.
    const today = await deploy();
    expect(await commandEnv(today.id)).toEqual({ RELEASE: "three", NEW_ONE: "new" });
  });
});

describe("the logs", () => {
  it("never hold a value, of a request accepted or refused", async () => {
    const { d, rw } = await freshOrganization(cp);
    const base = `/environments/${d.environments.running}/variables`;
    expect((await rw.put(`${base}/LOGGED`, { value: `${SECRET}-log` })).status).toBe(201);
    expect((await rw.put(`${base}/PASSWORD`, { value: `${SECRET}-log` })).status).toBe(400);
    expect((await rw.put(`${base}/EXTRA`, { value: `${SECRET}-log`, other: 1 })).status).toBe(400);
    const text = log.lines.join("\n");
    expect(text).toContain("/variables/LOGGED");
    expect(text).not.toContain(SECRET);
  });
});
