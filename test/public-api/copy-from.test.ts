// copy-from through both APIs (issue 34): refused with stable codes before anything starts
// (production target, itself as source, another project's source, never deployed, no backup
// for "latest", an operation already running, bad input), and nothing
// is made when refused; accepted, it is ONE operation on the target (kind copy) whose signed
// command is a restore as a copy: "fresh" dumps the source live on the shared server,
// "latest" names the source's newest backup in the store with its signed link. ("fresh" across
// servers: test/agent-link/copy-across-servers.test.ts.)
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson } from "../support/people.ts";
import { openedCommand } from "../support/stored-commands.ts";
import { freshOrganization } from "./fixtures.ts";

let cp: TestControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => cp?.close());

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
const operationsOf = async (env: string) => (await q("select kind, status from deployments where environment_id = $1 order by created_at", [env])).map((r) => `${r.kind}:${r.status}`);

/** A completed backup of `env` whose files are in the store, made `at`. */
async function storedBackup(organizationId: string, env: string, at: string): Promise<string> {
  const id = randomUUID();
  const files = [{ name: "db.dump", size: 10, sha256: "a".repeat(64) }, { name: "manifest.json", size: 5, sha256: "b".repeat(64) }];
  await q(
    `insert into backups (id, organization_id, environment_id, deployment_id, backup_type, status, files, storage, storage_key, stored_files, created_at, completed_at)
     values ($1, $2, $3, $4, 'manual', 'completed', $5, 'local', $6, $5, $7, $7)`,
    [id, organizationId, env, randomUUID(), JSON.stringify(files), `backups/${organizationId}/${env}/${id}`, at],
  );
  return id;
}

async function commandOf(deploymentId: string) {
  const [row] = await q("select type, sealed, signed from agent_commands where deployment_id = $1", [deploymentId]);
  expect(row, "a command was issued").toBeDefined();
  return { type: row.type as string, params: openedCommand(row).params as Record<string, unknown> };
}

it("refuses with stable codes before anything starts, and makes nothing", async () => {
  const { d, rw, ro: ro_ } = await freshOrganization(cp);
  const production = d.environments.running;
  const staging = d.environments.stopped;
  const refused = async (target: string, body: Record<string, unknown>, status: number, code: string) => {
    const before = [await operationsOf(target), await operationsOf(production)];
    const res = await rw.post(`/environments/${target}/copy-from`, body);
    expect(res.status, JSON.stringify(res.body)).toBe(status);
    expect(res.body.error).toBe(code);
    expect([await operationsOf(target), await operationsOf(production)]).toEqual(before);
    return res.body.message as string;
  };

  expect(await refused(production, { from_environment_id: staging }, 409, "copy_into_production")).toContain("production");
  await refused(staging, { from_environment_id: staging }, 422, "copy_source_is_target");
  await refused(staging, { from_environment_id: production, backup: "yesterday" }, 400, "validation_error");
  await refused(staging, { from_environment_id: "not-a-uuid" }, 400, "validation_error");
  await refused(staging, {}, 400, "validation_error");
  // Another organisation's environment is not there at all.
  const other = await freshOrganization(cp);
  await refused(staging, { from_environment_id: other.d.environments.running }, 404, "not_found");

  // Another project of the organisation.
  const project = (await rw.post("/projects", { name: `q-${randomUUID().slice(0, 8)}`, server_id: d.server_id })).body.id as string;
  const elsewhere = (await rw.post("/environments", { project_id: project, name: "main" })).body.id as string;
  await q("update environments set status = 'running' where id = $1", [elsewhere]);
  expect(await refused(staging, { from_environment_id: elsewhere }, 422, "copy_source_other_project")).toContain("another project");

  // Never deployed: as source, and as target.
  const fresh = (await rw.post("/environments", { project_id: d.project_id, name: "feature", stage: "development" })).body.id as string;
  expect(await refused(staging, { from_environment_id: fresh }, 409, "copy_not_deployed")).toContain("never deployed");
  await refused(fresh, { from_environment_id: production }, 409, "copy_not_deployed");

  // "latest" without a backup in the store (a pre-deploy snapshot does not count).
  await q(
    "insert into backups (id, organization_id, environment_id, deployment_id, backup_type, status, created_at) values ($1, $2, $3, $4, 'pre_deploy', 'completed', now())",
    [randomUUID(), d.organization_id, production, randomUUID()],
  );
  expect(await refused(staging, { from_environment_id: production, backup: "latest" }, 409, "copy_source_has_no_backup")).toContain('backup "fresh"');

  // A read-only key copies nothing.
  const before = await operationsOf(staging);
  const ro = await ro_.post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(ro.status, JSON.stringify(ro.body)).toBe(403);
  expect(await operationsOf(staging)).toEqual(before);
});

// The staging environment has no domain (and the test control plane no base domain): Odoo's default address.
it("fresh: one copy operation on the target whose signed command dumps the source live on their server; a second is refused while it runs", async () => {
  const { d, rw } = await freshOrganization(cp);
  const production = d.environments.running;
  const staging = d.environments.stopped;
  const res = await rw.post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  expect(res.body).toMatchObject({ status: "queued", environment_id: staging, poll_url: `/api/public/v1/deployments/${res.body.task_id}` });
  const task = await rw.get(`/deployments/${res.body.task_id}`);
  expect(task.body).toMatchObject({ id: res.body.task_id, environment_id: staging });
  expect(await operationsOf(staging)).toEqual(["copy:queued"]);
  // The source gets no operation: it is only read.
  expect(await operationsOf(production)).toEqual([]);

  const command = await commandOf(res.body.task_id);
  expect(command).toEqual({
    type: "restore",
    params: { deployment_id: res.body.task_id, environment_id: staging, backup_id: res.body.task_id, live_source: { environment_id: production }, copy: { base_url: null, catch_mail: true } },
  });

  const again = await rw.post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(again).toMatchObject({ status: 409, body: { error: "task_in_progress" } });
  expect(await operationsOf(staging)).toEqual(["copy:queued"]);
});

it("latest: the source's newest backup in the store, with its signed link; through the platform API too", async () => {
  const { d, rw } = await freshOrganization(cp);
  const production = d.environments.running;
  const staging = d.environments.stopped;
  await storedBackup(d.organization_id, production, "2026-01-01T00:00:00Z");
  const newest = await storedBackup(d.organization_id, production, "2026-02-01T00:00:00Z");
  const res = await rw.post(`/environments/${staging}/copy-from`, { from_environment_id: production, backup: "latest" });
  expect(res.status, JSON.stringify(res.body)).toBe(202);
  const command = await commandOf(res.body.task_id);
  expect(command.type).toBe("restore");
  expect(command.params).toMatchObject({ backup_id: newest, environment_id: staging, source: { environment_id: production, files: expect.any(Array) }, copy: expect.any(Object) });
  expect(command.params.live_source).toBeUndefined();
  await q("update deployments set status = 'success' where id = $1", [res.body.task_id]);

  const owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
  const viaPlatform = await owner.api.post(`/environments/${staging}/copy-from`, { from_environment_id: production, backup: "latest" });
  expect(viaPlatform.status, JSON.stringify(viaPlatform.body)).toBe(202);
  expect(viaPlatform.body).toMatchObject({ message: "Copy started", deployment_id: expect.any(String) });
  expect((await commandOf(viaPlatform.body.deployment_id)).params.backup_id).toBe(newest);
  const busy = await owner.api.post(`/environments/${staging}/copy-from`, { from_environment_id: production });
  expect(busy).toMatchObject({ status: 409, body: { error: "deployment_in_progress" } });
  const intoProduction = await owner.api.post(`/environments/${production}/copy-from`, { from_environment_id: staging });
  expect(intoProduction).toMatchObject({ status: 409, body: { error: "copy_into_production" } });
});
