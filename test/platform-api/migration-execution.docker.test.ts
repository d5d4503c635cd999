// A migration's execution (platform spec 4.3's 12 steps) over real HTTP against a control
// plane on a real PostgreSQL, with a simulated agent on the real link that answers the
// migration's deployment as the real agent's deploy does (its step events, the restore
// phases in starting_container's logs, its result): start creates the project and the
// linked environment, the deploy command carries the backup behind a signed link of the
// control plane's origin, the steps, percent and current step follow the agent's events
// (monotonic migration_progress events), the end completes the migration and sets the
// restore-once flag; a failure, retry and start again reuse what was made; cancel reaches the
// deployment; force_restore sends the backup again; unlink destroys the environment; a
// deployment that ends unseen is reconciled. The whole path with the real agent and Docker
// is test/e2e/migration.e2e.test.ts.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { DemoOrganization } from "@berth/control-plane";
import { MIGRATION_RESTORE_PHASES, DEPLOY_STEP_IDS, type Event, type SignedCommand } from "@berth/protocol";
import { startControlPlane, type TestControlPlane } from "../support/control-plane.ts";
import { demoOrganizationRecordingCommands } from "../support/demo-agent.ts";
import { addPerson, type Person } from "../support/people.ts";
import { useTestImages } from "../support/real-agent.ts";
import type { SimAgent } from "../support/sim-agent.ts";
import { waitForValue, waitUntil } from "../support/wait.ts";
import { fixedAnalysis } from "../support/fixed-analysis.ts";

let cp: TestControlPlane;
let origin: string;
let d: DemoOrganization;
let owner: Person;
let stop: () => void;
let commandFor: (deploymentId: string) => Promise<SignedCommand>;
let commands: SignedCommand[];
/** How the simulated agent ends the next deploy: ok, or failing at a restore phase. */
let outcome: { failAt?: (typeof MIGRATION_RESTORE_PHASES)[number]; hold?: boolean } = {};

const backup = randomBytes(300_000);
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** As the real agent's deploy reports a restoring deploy (apps/agent deploy.ts with `archive`). */
function answer(cmd: SignedCommand, a: SimAgent) {
  if (cmd.type !== "deploy" || outcome.hold) return;
  const p = cmd.params as { deployment_id: string; archive?: unknown };
  const base = { command_id: cmd.command_id, deployment_id: p.deployment_id };
  const events: Event[] = [];
  for (const step of DEPLOY_STEP_IDS) {
    events.push(a.event({ kind: "step.started", ...base, step }));
    if (step === "starting_container" && p.archive) {
      for (const phase of MIGRATION_RESTORE_PHASES) {
        events.push(a.event({ kind: "log", ...base, level: "info", message: phase, step, data: { migration_step: phase } }));
        if (phase === outcome.failAt) {
          const error = { code: "dump_refused", message: "psql: ERROR: relation \"res_partner\" already exists" };
          events.push(a.event({ kind: "step.failed", ...base, step, error }));
          events.push(a.event({ kind: "command.result", command_id: cmd.command_id, ok: false, error }));
          return a.sendEvents(events);
        }
      }
    }
    events.push(a.event({ kind: "step.finished", ...base, step }));
  }
  const result = { container_id: "c0ffee", container_name: "erp", image: "berth-test/erp:17.0", healthy: true, ...(p.archive ? { migration_restore: { format: "zip", files: 3 } } : {}) };
  events.push(a.event({ kind: "command.result", command_id: cmd.command_id, ok: true, result }));
  a.sendEvents(events);
}

beforeAll(async () => {
  cp = await startControlPlane({ listen: true, heartbeatMs: 1000, jobs: { pollingIntervalSeconds: 0.5, retryLimit: 0 }, analyzeBackup: fixedAnalysis({ recommended_cpu: 1.5, recommended_ram_mb: 3072, recommended_disk_gb: 25 }) });
  await useTestImages(cp);
  origin = `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`;
  const org = await demoOrganizationRecordingCommands(cp, origin, answer);
  ({ d, stop, commandFor, commands } = org);
  owner = await addPerson(cp.app, "org_owner", { organizationId: d.organization_id });
}, 60_000);

afterAll(async () => {
  stop?.();
  await cp?.close();
});

type MigrationBody = {
  status: string;
  progress_percent: number;
  current_step: string | null;
  error_message: string | null;
  project_id: string | null;
  environment_id: string | null;
  environment_url: string | null;
  deployment_id: string | null;
  steps: { id: string; status: string }[] | null;
};

const getMigration = async (id: string) => (await owner.api.get(`/migrations/${id}`)).body as MigrationBody;
const until = (id: string, check: (m: MigrationBody) => boolean, what: string) =>
  waitForValue(what, async () => {
    const m = await getMigration(id);
    return check(m) ? m : undefined;
  }, { timeoutMs: 15_000, intervalMs: 100 });

/** A migration with the backup uploaded, analysed and configured for the demo server. */
async function readyMigration(opts: { domain?: string; production?: boolean; git?: boolean } = {}) {
  const created = await owner.api.post("/migrations", {
    organization_id: d.organization_id,
    source_type: "on_premise",
    project_name: `Acme ${randomBytes(3).toString("hex")}`,
    data_processing_consent: true,
    ...(opts.git ? { git_repo_url: "https://git.example.com/acme/erp.git", git_branch: "main" } : {}),
  });
  const id = created.body.id as string;
  await owner.api.post(`/migrations/${id}/upload/init?file_name=acme.zip&file_size=${backup.length}&sha256=${sha(backup)}`);
  const form = new FormData();
  form.append("file", new Blob([new Uint8Array(backup)]), "acme.zip");
  expect((await fetch(`${origin}/api/v1/migrations/${id}/upload/direct`, { method: "POST", headers: { authorization: `Bearer ${owner.token}` }, body: form })).status).toBe(200);
  await until(id, (m) => m.status === "analyzed", "the analysis");
  const conf = await owner.api.post(`/migrations/${id}/configure`, { target_vm_id: d.server_id, ...(opts.domain ? { target_domain: opts.domain } : {}), ...(opts.production ? { production: true } : {}) });
  expect(conf.body.status).toBe("ready");
  return id;
}

async function progressEvents(id: string) {
  const { rows } = await cp.database.pool.query<{ data: { progress_percent: number; status: string; current_step: string | null } }>(
    "select data from org_events where type = 'migration_progress' and data->>'migration_id' = $1 order by id",
    [id],
  );
  return rows.map((r) => r.data);
}

it("start runs the 12 steps: project, linked environment, a deploy that restores the backup, progress to completed", async () => {
  outcome = {};
  const id = await readyMigration({ domain: "erp.acme-migrated.example", git: true });
  const started = await owner.api.post(`/migrations/${id}/start`);
  expect(started).toMatchObject({ status: 202, body: { status: "processing", migration_id: id } });

  const done = await until(id, (m) => m.status === "completed", "the migration to complete");
  expect(done).toMatchObject({ progress_percent: 100, current_step: "completed", error_message: null, environment_url: "https://erp.acme-migrated.example" });
  expect(done.steps!.every((s) => s.status === "completed")).toBe(true);
  // The list shows where each migrated ERP is served too (one lookup for the page).
  const listed = (await owner.api.get(`/migrations?organization_id=${d.organization_id}`)).body as { items: (MigrationBody & { id: string })[] };
  expect(listed.items.find((m) => m.id === id)?.environment_url).toBe("https://erp.acme-migrated.example");
  expect(listed.items.filter((m) => m.id !== id && m.environment_id === null).every((m) => m.environment_url === null)).toBe(true);

  // Steps 1 and 2: the project on the target server with the detected version and the repository, the environment sized by the recommendation.
  const { rows: projects } = await cp.database.pool.query("select * from projects where id = $1", [done.project_id]);
  expect(projects[0]).toMatchObject({ organization_id: d.organization_id, erp_version: "17.0", git_repo_url: "https://git.example.com/acme/erp.git", server_id: d.server_id });
  const { rows: envs } = await cp.database.pool.query("select * from environments where id = $1", [done.environment_id]);
  expect(envs[0]).toMatchObject({ migration_id: id, server_id: d.server_id, name: "staging", cpu_cores: 2, ram_mb: 3072, disk_gb: 25, domain: "erp.acme-migrated.example", migration_restore_completed: true });
  expect(envs[0].migration_restore_completed_at).not.toBeNull();
  const deployment = (await owner.api.get(`/deployments/${done.deployment_id}`)).body;
  expect(deployment).toMatchObject({ status: "success", trigger: "migration", environment_id: done.environment_id });

  // The deploy command carries the backup behind a signed link on the control plane's own origin; a migrated database keeps its own administrator.
  const cmd = await commandFor(done.deployment_id!);
  const p = cmd.params as { archive: { migration_id: string; path: string; file: { name: string; size: number; sha256: string }; neutralize: boolean }; admin_login?: unknown };
  expect(p.archive).toMatchObject({ migration_id: id, file: { size: backup.length, sha256: sha(backup) }, neutralize: true });
  expect(p.admin_login).toBeUndefined();
  const fetched = await fetch(`${origin}${p.archive.path}/${p.archive.file.name}`);
  expect(fetched.status).toBe(200);
  expect(sha(Buffer.from(await fetched.arrayBuffer()))).toBe(sha(backup));
  const range = await fetch(`${origin}${p.archive.path}/${p.archive.file.name}`, { headers: { range: "bytes=100-199" } });
  expect(range.status).toBe(206);
  expect(Buffer.from(await range.arrayBuffer())).toEqual(backup.subarray(100, 200));
  // One character of the signed body changed (the signature's last character may carry only padding bits).
  const altered = p.archive.path.replace(/mgd_(.)/, (_, c: string) => `mgd_${c === "A" ? "B" : "A"}`);
  expect((await fetch(`${origin}${altered}/${p.archive.file.name}`)).status).toBe(403);

  // Every step was announced, and the percent never went back.
  const events = await progressEvents(id);
  const percents = events.map((e) => e.progress_percent);
  expect(percents).toEqual([...percents].sort((a, b) => a - b));
  // With the repository cloned before the restore, step 7's 65 and step 9's 80 are passed over: 8 and 10 were done by then.
  expect([...new Set(percents)]).toEqual([0, 5, 10, 20, 30, 40, 55, 70, 85, 95, 100]);
  for (const step of ["creating_project", "creating_environment", "deploying_containers", "cloning_repository", "downloading_backup", "restoring_database", "restoring_filestore", "configuring_routing", "verifying_health"]) {
    expect(events.some((e) => e.current_step === step), step).toBe(true);
  }
  expect(events.at(-1)).toMatchObject({ status: "completed", progress_percent: 100 });

  // The restore-once rule: the next deploy keeps the data; force_restore sends the backup again.
  const again = await owner.api.post(`/projects/${done.project_id}/environments/${done.environment_id}/deploy`);
  expect(again.status).toBeLessThan(300);
  const next = await commandFor(again.body.deployment?.id ?? again.body.id);
  expect((next.params as { archive?: unknown }).archive).toBeUndefined();
  await waitUntil("the second deploy to end", async () => (await owner.api.get(`/deployments/${next.params.deployment_id as string}`)).body.status === "success", { timeoutMs: 10_000, intervalMs: 100 });
  const forced = await owner.api.post(`/projects/${done.project_id}/environments/${done.environment_id}/deploy?force_restore=true`);
  expect(forced.body.migration_restore_reset).toBe(true);
  const restoring = await commandFor(forced.body.deployment?.id ?? forced.body.id);
  expect((restoring.params as { archive?: { migration_id: string } }).archive?.migration_id).toBe(id);
}, 60_000);

it("a step that fails fails the migration with its name; retry and start again reuse the project and environment", async () => {
  outcome = { failAt: "restoring_database" };
  const id = await readyMigration();
  await owner.api.post(`/migrations/${id}/start`);
  const failed = await until(id, (m) => m.status === "failed", "the migration to fail");
  expect(failed.error_message).toBe('Restoring database failed: psql: ERROR: relation "res_partner" already exists');
  expect(failed.steps!.find((s) => s.id === "restoring_database")!.status).toBe("failed");
  expect(failed.progress_percent).toBe(40);

  expect((await owner.api.post(`/migrations/${id}/retry`)).body).toMatchObject({ status: "ready", retry_count: 1 });
  outcome = {};
  expect((await owner.api.post(`/migrations/${id}/start`)).status).toBe(202);
  const done = await until(id, (m) => m.status === "completed", "the second start to complete");
  expect(done).toMatchObject({ project_id: failed.project_id, environment_id: failed.environment_id });
  expect(done.deployment_id).not.toBe(failed.deployment_id);
  const { rows } = await cp.database.pool.query("select count(*)::int as n from environments where migration_id = $1", [id]);
  expect(rows[0].n).toBe(1);

  // Once the migration and its backup are deleted, force_restore has nothing to restore: refused, nothing changed.
  expect((await owner.api.delete(`/migrations/${id}`)).body).toMatchObject({ deleted: true, storage_deleted: true });
  const forced = await owner.api.post(`/projects/${done.project_id}/environments/${done.environment_id}/deploy?force_restore=true`);
  expect(forced).toMatchObject({ status: 409, body: { error: "migration_backup_unavailable" } });
  const { rows: env } = await cp.database.pool.query("select migration_restore_completed from environments where id = $1", [done.environment_id]);
  expect(env[0].migration_restore_completed).toBe(true);
}, 60_000);

it("a production migration is not neutralised; cancel reaches its deployment; unlink destroys the environment", async () => {
  outcome = { hold: true };
  const id = await readyMigration({ production: true });
  await owner.api.post(`/migrations/${id}/start`);
  const running = await until(id, (m) => m.deployment_id !== null, "the deployment");
  const cmd = await commandFor(running.deployment_id!);
  expect((cmd.params as { archive: { neutralize: boolean } }).archive.neutralize).toBe(false);
  const { rows: envs } = await cp.database.pool.query("select name from environments where id = $1", [running.environment_id]);
  expect(envs[0].name).toBe("production");
  expect((await owner.api.post(`/migrations/${id}/unlink-environment`)).body.error).toBe("migration_in_progress");
  expect((await owner.api.post(`/migrations/${id}/cancel`)).body).toMatchObject({ status: "cancelled" });
  expect((await owner.api.get(`/deployments/${running.deployment_id}`)).body.status).toBe("cancelled");

  const unlinked = await owner.api.post(`/migrations/${id}/unlink-environment`);
  expect(unlinked.body).toMatchObject({ status: "unlinked", environment_deleted: true });
  await waitForValue("the destroy command", () => commands.find((c) => c.type === "destroy" && (c.params as { environment_id: string }).environment_id === running.environment_id));
  expect(await getMigration(id)).toMatchObject({ status: "analyzed", environment_id: null, steps: null });
  expect((await owner.api.post(`/migrations/${id}/unlink-environment`)).body.error).toBe("migration_not_linked");
}, 60_000);

it("a migration whose deployment ended without its result reaching it is settled by the reconcile job", async () => {
  outcome = { hold: true };
  const id = await readyMigration();
  await owner.api.post(`/migrations/${id}/start`);
  const running = await until(id, (m) => m.deployment_id !== null, "the deployment");
  // As the dispatcher's sweep fails a command its server never took.
  await cp.database.pool.query("update deployments set status = 'failed', error_message = 'The server was offline for 30 minutes', completed_at = now() - interval '2 minutes' where id = $1", [running.deployment_id]);
  expect(await cp.app.services.migrations.execution.reconcile()).toBeGreaterThanOrEqual(1);
  expect(await getMigration(id)).toMatchObject({ status: "failed", error_message: "The migration's deployment ended without finishing: The server was offline for 30 minutes" });
}, 60_000);
