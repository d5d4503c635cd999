// The deployment lifecycle of the platform API (platform spec 3.1, 4.1, 5, 7): records,
// state rules and their exact messages, permissions per role, rate limits. The server has
// no agent here, so operations wait in the outbox; outcomes an agent would report are set
// in SQL. test/e2e/platform-lifecycle.e2e.test.ts runs the same rules with a real agent.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createDemoOrganization } from "@berth/control-plane";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { addPerson, type Person, type PersonRole } from "../support/people.ts";

let cp: TestControlPlane;
let demo: Awaited<ReturnType<typeof createDemoOrganization>>;
let admin: Person;
const COMMIT = "a".repeat(40);

const q = async (text: string, values: unknown[] = []) => (await cp.database.pool.query(text, values)).rows;
/** What the agent would report: the operation ended with this status. */
const finish = (id: string, status: string, extra: { image?: string } = {}) =>
  q("update deployments set status = $2, started_at = coalesce(started_at, now()), completed_at = now(), image_tag = coalesce($3, image_tag) where id = $1", [id, status, extra.image ?? null]);
const newEnvironment = async (name: string, status = "running") => {
  const env = await cp.app.services.environments.create({ organizationId: demo.organization_id, projectId: null }, { project_id: demo.project_id, name });
  await q("update environments set status = $2 where id = $1", [env.id, status]);
  return env.id;
};

beforeAll(async () => {
  cp = await startControlPlane();
  demo = await createDemoOrganization(cp.database.db, cp.app.services);
  admin = await addPerson(cp.app, "project_admin", { organizationId: demo.organization_id, projectId: demo.project_id });
});
afterAll(async () => cp?.close());
// Each test starts in a fresh rate-limit window.
beforeEach(() => cp.clock.advance(61_000));

const create = (p: Person, environmentId: string, body: Record<string, unknown> = {}) =>
  p.api.post("/deployments", { project_id: demo.project_id, environment_id: environmentId, git_branch: "main", ...body });

describe("create, list, get", () => {
  it("creates a pending manual deployment by the caller, numbered per environment", async () => {
    const envId = await newEnvironment("create-1");
    const res = await create(admin, envId, { git_commit: COMMIT });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      project_id: demo.project_id,
      environment_id: envId,
      vm_id: demo.server_id,
      version: 1,
      status: "pending",
      trigger: "manual",
      triggered_by: admin.userId,
      git_branch: "main",
      git_commit: COMMIT,
      extra_data: { config: { cpu_cores: expect.any(Number), ram_mb: expect.any(Number), disk_gb: expect.any(Number), workers: expect.any(Number) } },
    });
    const busy = await create(admin, envId);
    expect(busy.status).toBe(409);
    expect(busy.body.message).toBe("Deployment already in progress");
    await finish(res.body.id, "success");
    const second = await create(admin, envId);
    expect(second.body.version).toBe(2);
    expect((await admin.api.get(`/deployments/${res.body.id}`)).body).toMatchObject({ id: res.body.id, status: "success", duration_seconds: expect.any(Number) });
  });

  it("refuses an environment of another project, and unknown ids, with 404", async () => {
    expect((await admin.api.post("/deployments", { project_id: demo.project_id, environment_id: "00000000-0000-4000-8000-000000000000", git_branch: "main" })).status).toBe(404);
    const res = await admin.api.get("/deployments/00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(404);
    expect(res.body.message).toBe("Deployment not found");
  });

  it("lists newest first with project, status, skip and limit; limit is capped at 100", async () => {
    const envId = await newEnvironment("list-1");
    const a = await create(admin, envId);
    await finish(a.body.id, "failed");
    const b = await create(admin, envId);
    const all = await admin.api.get(`/deployments?project_id=${demo.project_id}`);
    expect(all.status).toBe(200);
    expect(all.body.findIndex((d: { id: string }) => d.id === b.body.id)).toBeLessThan(all.body.findIndex((d: { id: string }) => d.id === a.body.id));
    const failed = await admin.api.get(`/deployments?project_id=${demo.project_id}&status=failed`);
    expect(failed.body.every((d: { status: string }) => d.status === "failed")).toBe(true);
    expect(failed.body.map((d: { id: string }) => d.id)).toContain(a.body.id);
    const page = await admin.api.get(`/deployments?project_id=${demo.project_id}&skip=1&limit=1`);
    expect(page.body).toHaveLength(1);
    expect(page.body[0].id).toBe(all.body[1].id);
    expect((await admin.api.get("/deployments?limit=101")).status).toBe(400);
    expect((await admin.api.get("/deployments?status=exploded")).status).toBe(400);
  });
});

describe("logs and progress", () => {
  it("returns log entries by level with paging, and steps with their state and lines", async () => {
    const envId = await newEnvironment("logs-1");
    const d = (await create(admin, envId)).body;
    const { appendLogs } = await import("../../apps/control-plane/src/modules/events/event-log.repo.ts");
    const t0 = Date.now();
    const at = (s: number) => new Date(t0 + s * 1000).toISOString();
    await appendLogs(cp.database.pool, demo.organization_id, [
      { deploymentId: d.id, ts: at(0), level: "info", message: "network ready", step: "creating_network" },
      { deploymentId: d.id, ts: at(1), level: "debug", message: "pulling layer", step: "pulling_image" },
      { deploymentId: d.id, ts: at(2), level: "warning", message: "slow registry", step: "pulling_image", data: { seconds: 12 } },
    ]);
    await q("update deployments set status = 'deploying', started_at = now(), current_step = 'pulling_image' where id = $1", [d.id]);
    const logs = await admin.api.get(`/deployments/${d.id}/logs`);
    expect(logs.body.deployment_id).toBe(d.id);
    expect(logs.body.logs.map((l: { message: string }) => l.message)).toEqual(["network ready", "pulling layer", "slow registry"]);
    expect(logs.body.logs[2]).toMatchObject({ deployment_id: d.id, level: "warning", step: "pulling_image", data: { seconds: 12 }, timestamp: at(2) });
    expect((await admin.api.get(`/deployments/${d.id}/logs?level=warning`)).body.logs).toHaveLength(1);
    expect((await admin.api.get(`/deployments/${d.id}/logs?skip=1&limit=1`)).body.logs.map((l: { message: string }) => l.message)).toEqual(["pulling layer"]);
    expect((await admin.api.get(`/deployments/${d.id}/logs?limit=501`)).status).toBe(400);

    const progress = await admin.api.get(`/deployments/${d.id}/progress`);
    expect(progress.status).toBe(200);
    expect(progress.body).toMatchObject({ deployment_id: d.id, status: "deploying", current_step: "pulling_image" });
    const steps = progress.body.steps as { id: string; status: string; logs?: { message: string }[] }[];
    expect(steps.map((s) => s.id)[0]).toBe("initializing");
    expect(steps.at(-1)!.id).toBe("completed");
    const idx = steps.findIndex((s) => s.id === "pulling_image");
    expect(steps.slice(0, idx).every((s) => s.status === "completed")).toBe(true);
    expect(steps[idx]!.status).toBe("running");
    expect(steps.slice(idx + 1).every((s) => s.status === "pending")).toBe(true);
    expect(steps[idx]!.logs!.map((l) => l.message)).toEqual(["pulling layer", "slow registry"]);
  });
});

describe("retry, rollback, cancel (rules 1-3)", () => {
  it("retries a failed deployment as a new record with the same commit and configuration", async () => {
    const envId = await newEnvironment("retry-1");
    const original = (await create(admin, envId, { git_commit: COMMIT })).body;
    // Retry is refused while the original has not failed.
    const early = await admin.api.post(`/deployments/${original.id}/retry`);
    expect(early.status).toBe(400);
    expect(early.body.message).toBe("Can only retry failed deployments");
    await finish(original.id, "failed");
    await q("update environments set cpu_cores = 8 where id = $1", [envId]);
    const retry = await admin.api.post(`/deployments/${original.id}/retry`);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ status: "pending", version: original.version + 1, git_branch: "main", git_commit: COMMIT, extra_data: { retry_of: original.id, config: original.extra_data.config } });
    expect(retry.body.id).not.toBe(original.id);
    expect((await admin.api.get(`/deployments/${original.id}`)).body.status).toBe("failed");
    const again = await admin.api.post(`/deployments/${original.id}/retry`);
    expect(again.status).toBe(409);
    expect(again.body.message).toBe("Deployment already in progress");
    expect((await admin.api.post("/deployments/00000000-0000-4000-8000-000000000000/retry")).body.message).toBe("Deployment not found");
  });

  it("rolls back to a successful deployment: its commit, image and configuration, linked both ways", async () => {
    const envId = await newEnvironment("rollback-1");
    const good = (await create(admin, envId, { git_commit: "1".repeat(40) })).body;
    await finish(good.id, "success", { image: "erp:17.0-good" });
    await q("update environments set ram_mb = 9999 where id = $1", [envId]);
    const bad = (await create(admin, envId, { git_commit: "2".repeat(40) })).body;
    await finish(bad.id, "failed");
    const refused = await admin.api.post(`/deployments/${bad.id}/rollback`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe("Can only rollback to successful deployments");
    const newer = (await create(admin, envId, { git_commit: "3".repeat(40) })).body;
    await finish(newer.id, "success");
    const rb = await admin.api.post(`/deployments/${good.id}/rollback`);
    expect(rb.status).toBe(200);
    expect(rb.body).toMatchObject({
      kind: "rollback",
      trigger: "rollback",
      status: "pending",
      version: newer.version + 1,
      git_commit: "1".repeat(40),
      image_tag: "erp:17.0-good",
      rollback_from_id: newer.id,
      extra_data: { rollback_to: good.id, config: good.extra_data.config },
    });
    const busy = await admin.api.post(`/deployments/${good.id}/rollback`);
    expect(busy.status).toBe(409);
    expect(busy.body.message).toBe("Deployment already in progress");
  });

  it("cancels a pending deployment with a warning log naming who did it; a finished one cannot be cancelled", async () => {
    const envId = await newEnvironment("cancel-1");
    const d = (await create(admin, envId)).body;
    const res = await admin.api.post(`/deployments/${d.id}/cancel`);
    expect(res.status).toBe(200);
    expect(res.body.message).toMatch(/cancelled/i);
    expect((await admin.api.get(`/deployments/${d.id}`)).body.status).toBe("cancelled");
    const logs = (await admin.api.get(`/deployments/${d.id}/logs?level=warning`)).body.logs;
    expect(logs).toEqual([expect.objectContaining({ message: "Deployment cancelled by user", data: { cancelled_by: admin.userId } })]);
    const again = await admin.api.post(`/deployments/${d.id}/cancel`);
    expect(again.status).toBe(400);
    expect(again.body.message).toBe("Cannot cancel deployment in cancelled state");
  });
});

describe("destroy, environment deploys, settings (rules 4, 5, 9)", () => {
  it("destroy records a destroy deployment, cancelling one in progress", async () => {
    const envId = await newEnvironment("destroy-1");
    const active = (await create(admin, envId)).body;
    const res = await admin.api.delete(`/deployments/environment/${envId}/destroy?delete_data=true`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ environment_id: envId, deleted_containers: true, deleted_database: true, deleted_data: true, message: expect.any(String) });
    expect((await admin.api.get(`/deployments/${active.id}`)).body.status).toBe("cancelled");
    const record = (await admin.api.get(`/deployments/${res.body.deployment_id}`)).body;
    expect(record).toMatchObject({ kind: "destroy", trigger: "destroy", extra_data: { delete_data: true } });
  });

  it("deploys an environment: skipped when it runs, fresh with force, 409 without force while busy", async () => {
    const envId = await newEnvironment("envdeploy-1", "running");
    const skipped = await admin.api.post(`/environments/${envId}/deploy`, { force: false });
    expect(skipped.status).toBe(200);
    expect(skipped.body).toMatchObject({ skipped: true, deployment: null });
    const forced = await admin.api.post(`/environments/${envId}/deploy`, { force: true });
    expect(forced.status).toBe(201);
    expect(forced.body.deployment).toMatchObject({ kind: "redeploy", status: "pending", trigger: "manual" });
    const busy = await admin.api.post(`/environments/${envId}/deploy`, { force: false });
    expect(busy.status).toBe(409);
    expect(busy.body.message).toBe("Deployment already in progress");
    // force replaces the one in progress.
    const forcedAgain = await admin.api.post(`/environments/${envId}/deploy`, { force: true });
    expect(forcedAgain.status).toBe(201);
    expect((await admin.api.get(`/deployments/${forced.body.deployment.id}`)).body.status).toBe("cancelled");
  });

  it("force_restore clears the restore flag of a migrated environment only", async () => {
    const envId = await newEnvironment("migrated-1", "running");
    // A migration whose backup is gone: nothing to restore again, refused and nothing changed.
    await q("update environments set migration_id = gen_random_uuid(), migration_restore_completed = true, migration_restore_completed_at = now() where id = $1", [envId]);
    const gone = await admin.api.post(`/projects/${demo.project_id}/environments/${envId}/deploy?force_restore=true`);
    expect(gone).toMatchObject({ status: 409, body: { error: "migration_backup_unavailable" } });
    const [migration] = await q(
      `insert into migrations (organization_id, source_type, project_name, data_processing_consent_at, status, storage, storage_key, stored_size_bytes, stored_sha256)
       values ($1, 'on_premise', 'Moved in', now(), 'completed', 'local', 'migrations/x/backup', 10, repeat('a', 64)) returning id`,
      [demo.organization_id],
    );
    await q("update environments set migration_id = $2 where id = $1", [envId, migration.id]);
    const res = await admin.api.post(`/projects/${demo.project_id}/environments/${envId}/deploy?force_restore=true`);
    expect(res.status).toBe(201);
    expect(res.body.migration_restore_reset).toBe(true);
    const [env] = await q("select migration_restore_completed, migration_restore_completed_at from environments where id = $1", [envId]);
    expect(env).toEqual({ migration_restore_completed: false, migration_restore_completed_at: null });
    const plain = await newEnvironment("plain-1", "stopped");
    const other = await admin.api.post(`/projects/${demo.project_id}/environments/${plain}/deploy?force_restore=true`);
    expect(other.body.migration_restore_reset).toBe(false);
  });

  it("changes auto_deploy and git_branch; an empty change is a 400", async () => {
    const envId = await newEnvironment("patch-1");
    const res = await admin.api.patch(`/projects/${demo.project_id}/environments/${envId}`, { auto_deploy: true, git_branch: "release/1.2" });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: envId, auto_deploy: true, git_branch: "release/1.2" });
    expect((await admin.api.patch(`/projects/${demo.project_id}/environments/${envId}`, {})).status).toBe(400);
    expect((await admin.api.patch(`/projects/${demo.project_id}/environments/${envId}`, { git_branch: "bad branch;rm" })).status).toBe(400);
  });

  it("backs up and refuses to restore a backup that has not completed", async () => {
    const envId = await newEnvironment("backup-1");
    const b = await admin.api.post(`/environments/${envId}/backups`, { backup_type: "manual", comment: "before upgrade" });
    expect(b.status).toBe(201);
    expect(b.body).toMatchObject({ environment_id: envId, status: "pending", comment: "before upgrade" });
    const list = await admin.api.get(`/environments/${envId}/backups`);
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([b.body.id]);
    const restore = await admin.api.post(`/environments/${envId}/restore`, { backup_id: b.body.id });
    expect(restore.status).toBe(409);
  });
});

describe("limits", () => {
  it("allows 10 deployments and heavy operations per organisation per minute, then 429 with headers", async () => {
    const statuses: number[] = [];
    let last;
    // The window is the clock's minute (rate-limiter.ts): eleven requests straddling its end
    // would meet two windows, so they start early in one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 30_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 100));
    for (let i = 0; i < 11; i++) {
      last = await create(admin, await newEnvironment(`rate-${i}`));
      statuses.push(last.status);
    }
    expect(statuses.slice(0, 10).every((s) => s === 201)).toBe(true);
    expect(last!.status).toBe(429);
    expect(last!.headers["x-ratelimit-limit"]).toBe("10");
    expect(last!.headers["x-ratelimit-remaining"]).toBe("0");
    expect(Number(last!.headers["retry-after"])).toBeGreaterThan(0);
  }, 90_000);
});

describe("permissions per role (platform spec 5)", () => {
  // allowed: the request got past authorisation (its own outcome may be 2xx, 400 or 409);
  // denied: 403 with the spec's words; hidden: 404, the caller cannot see the project at all.
  type Outcome = "allowed" | "denied" | "hidden";
  const ROLES: PersonRole[] = ["portal_admin", "org_owner", "org_admin", "project_admin", "project_member", "org_member", "outsider"];
  const expected = (role: PersonRole, write: boolean): Outcome =>
    role === "org_member" || role === "outsider" ? "hidden" : write && role === "project_member" ? "denied" : "allowed";

  const ENDPOINTS: { name: string; write: boolean; message?: string; call: (p: Person, ids: { env: string; dep: string; failed: string; backup: string }) => Promise<{ status: number; body: { message?: string } }> }[] = [
    { name: "list", write: false, call: (p) => p.api.get(`/deployments?project_id=${demo.project_id}`) },
    { name: "get", write: false, call: (p, ids) => p.api.get(`/deployments/${ids.dep}`) },
    { name: "logs", write: false, call: (p, ids) => p.api.get(`/deployments/${ids.dep}/logs`) },
    { name: "progress", write: false, call: (p, ids) => p.api.get(`/deployments/${ids.dep}/progress`) },
    { name: "backups list", write: false, call: (p, ids) => p.api.get(`/environments/${ids.env}/backups`) },
    { name: "create", write: true, message: "You don't have permission to deploy.", call: (p, ids) => create(p, ids.env) },
    { name: "retry", write: true, message: "You don't have permission to deploy.", call: (p, ids) => p.api.post(`/deployments/${ids.failed}/retry`) },
    { name: "rollback", write: true, message: "You don't have permission to deploy.", call: (p, ids) => p.api.post(`/deployments/${ids.failed}/rollback`) },
    { name: "cancel", write: true, message: "You don't have permission to cancel deployments.", call: (p, ids) => p.api.post(`/deployments/${ids.failed}/cancel`) },
    { name: "environment deploy", write: true, call: (p, ids) => p.api.post(`/environments/${ids.env}/deploy`, { force: false }) },
    { name: "project environment deploy", write: true, call: (p, ids) => p.api.post(`/projects/${demo.project_id}/environments/${ids.env}/deploy`) },
    { name: "patch", write: true, call: (p, ids) => p.api.patch(`/projects/${demo.project_id}/environments/${ids.env}`, { auto_deploy: false }) },
    { name: "backup", write: true, call: (p, ids) => p.api.post(`/environments/${ids.env}/backups`, {}) },
    { name: "restore", write: true, call: (p, ids) => p.api.post(`/environments/${ids.env}/restore`, { backup_id: ids.backup }) },
    { name: "destroy", write: true, call: (p, ids) => p.api.delete(`/deployments/environment/${ids.env}/destroy`) },
  ];

  for (const role of ROLES) {
    it(`${role}`, async () => {
      const person = await addPerson(cp.app, role, { organizationId: demo.organization_id, projectId: demo.project_id });
      const env = await newEnvironment(`matrix-${role}`);
      const dep = (await create(admin, env)).body.id;
      await finish(dep, "failed");
      const backup = (await admin.api.post(`/environments/${env}/backups`, {})).body.id;
      await q("update deployments set status = 'failed' where environment_id = $1 and kind = 'backup'", [env]);
      const ids = { env, dep, failed: dep, backup };
      cp.clock.advance(61_000);
      const seen: Record<string, string> = {};
      const want: Record<string, string> = {};
      for (const e of ENDPOINTS) {
        const res = await e.call(person, ids);
        const outcome: Outcome = res.status === 404 ? "hidden" : res.status === 403 ? "denied" : "allowed";
        seen[e.name] = outcome;
        want[e.name] = expected(role, e.write);
        if (outcome === "denied" && e.message) expect(res.body.message, e.name).toBe(e.message);
        if (outcome === "allowed") expect(res.status, `${e.name}: ${JSON.stringify(res.body)}`).toBeLessThan(500);
      }
      expect(seen).toEqual(want);
    });
  }
});
