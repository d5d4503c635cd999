// The writes that fold agent events into operation rows, environments and backups, inside
// the ingest transaction (deployment-events.ts decides which). Status lists come from the
// state machine, spelled into the statements as literals so their plans stay as they were.
import type pg from "pg";
import { ACTIVE_STATUSES, DEPLOY_KINDS, WAITING_STATUSES } from "./deployment-state.ts";

type Client = Pick<pg.PoolClient, "query">;

const list = (values: readonly string[]) => `(${values.map((v) => `'${v}'`).join(", ")})`;
const ACTIVE = list(ACTIVE_STATUSES);
const WAITING = list(WAITING_STATUSES);

// Every statement here is scoped to the server whose agent sent the event (the operation's
// deployments.server_id, the server its command went to): an agent moves only its own
// server's operations. The step statements also say whether the operation is the sender's
// (`own`), read in the same statement, so a foreign one is counted without a round trip more.

/** The first step of a waiting operation makes it deploying (deploy kinds) or running; later steps only move current_step. */
export async function stepStarted(client: Client, serverId: string, deploymentId: string, step: string, ts: string) {
  const { rows } = await client.query<{ own: boolean; kind: string | null; environment_id: string | null }>(
    `with moved as (
       update deployments set
         status = case when status in ${WAITING}
                       then (case when kind = any($4::text[]) then 'deploying' else 'running' end) else status end,
         started_at = coalesce(started_at, $3::timestamptz), current_step = $2
       where id = $1 and server_id = $5 and status in ${ACTIVE}
       returning kind, environment_id)
     select exists (select 1 from deployments where id = $1 and server_id = $5) as own,
       (select kind from moved) as kind, (select environment_id from moved) as environment_id`,
    [deploymentId, step, ts, DEPLOY_KINDS, serverId],
  );
  const r = rows[0]!;
  return { own: r.own, moved: r.kind !== null && r.environment_id !== null ? { kind: r.kind, environment_id: r.environment_id } : undefined };
}

/** Whether the operation is the server's; counts a finished step if it is still active. */
export async function stepFinished(client: Client, serverId: string, deploymentId: string): Promise<boolean> {
  const { rows } = await client.query<{ own: boolean }>(
    `with counted as (
       update deployments set steps_completed = steps_completed + 1,
         progress_percent = least(100, ((steps_completed + 1) * 100) / greatest(total_steps, 1))
       where id = $1 and server_id = $2 and status in ${ACTIVE})
     select exists (select 1 from deployments where id = $1 and server_id = $2) as own`,
    [deploymentId, serverId],
  );
  return rows[0]!.own;
}

/** Whether the operation is the server's; records the failed step's message if it is still active. */
export async function stepFailed(client: Client, serverId: string, deploymentId: string, message: string): Promise<boolean> {
  const { rows } = await client.query<{ own: boolean }>(
    `with noted as (update deployments set error_message = $2 where id = $1 and server_id = $3 and status in ${ACTIVE})
     select exists (select 1 from deployments where id = $1 and server_id = $3) as own`,
    [deploymentId, message, serverId],
  );
  return rows[0]!.own;
}

/** The active operation a command of this server runs, locked for its result (another server's command finds none). */
export async function lockActiveOperationOf(client: Client, serverId: string, commandId: string) {
  const { rows } = await client.query<{ id: string; kind: string; environment_id: string; organization_id: string }>(
    `select d.id, d.kind, d.environment_id, d.organization_id from agent_commands c join deployments d on d.id = c.deployment_id
     where c.command_id = $1 and c.server_id = $2 and d.server_id = $2 and d.status in ${ACTIVE} for update of d`,
    [commandId, serverId],
  );
  return rows[0];
}

export interface Finish {
  status: string;
  ts: string;
  /** null when it succeeded. */
  errorMessage: string | null;
  containerId: string | null;
  image: string | null;
  commit: string | null;
}

export async function finishOperation(client: Client, id: string, f: Finish): Promise<void> {
  await client.query(
    `update deployments d set status = $2, completed_at = $3::timestamptz, started_at = coalesce(d.started_at, $3::timestamptz),
       error_message = case when $4::text is null then null else coalesce($4, d.error_message) end,
       progress_percent = case when $4::text is null then 100 else d.progress_percent end,
       current_step = case when $4::text is null then 'completed' else d.current_step end,
       container_id = coalesce($5, d.container_id), image_tag = coalesce($6, d.image_tag), git_commit = coalesce(d.git_commit, $7)
     where d.id = $1`,
    [id, f.status, f.ts, f.errorMessage, f.containerId, f.image, f.commit],
  );
}

/** Payload: an operation's id. Its backup or copy finished; what waits on it may go on (operation-chains.ts). */
export const OPERATION_FINISHED_CHANNEL = "berth_operation_finished";

/** Announced on commit of the ingest transaction, to every replica. */
export async function announceFinished(client: Client, id: string): Promise<void> {
  await client.query("select pg_notify($1, $2)", [OPERATION_FINISHED_CHANNEL, id]);
}

/** The deployment a successful rollback replaced. */
export async function markRolledBack(client: Client, rollbackId: string): Promise<void> {
  await client.query("update deployments set status = 'rolled_back' where id = (select rollback_from_id from deployments where id = $1) and status = 'success'", [rollbackId]);
}

export async function setEnvironmentDeploying(client: Client, environmentId: string): Promise<void> {
  await client.query("update environments set status = 'deploying', updated_at = now() where id = $1 and status <> 'deploying'", [environmentId]);
}

/**
 * A destroyed environment is no longer active: it gives up its domain and aliases (another
 * environment may take them; deployed again, it comes back at its generated name).
 */
export async function setEnvironmentDestroyed(client: Client, environmentId: string): Promise<void> {
  await client.query(
    `with released as (delete from environment_domains where environment_id = $1)
     update environments set status = 'pending', container_id = null, container_name = null, is_active = false,
       domain = null, aliases = '{}', updated_at = now() where id = $1`,
    [environmentId],
  );
}

/** After a successful operation; `reactivate`: a deploy brings a destroyed environment back into use. */
export async function setEnvironmentAfterSuccess(
  client: Client,
  environmentId: string,
  e: { status: string; containerId: string | null; containerName: string | null; reactivate: boolean },
): Promise<void> {
  await client.query(
    `update environments set status = $2, container_id = coalesce($3, container_id), container_name = coalesce($4, container_name),
       is_active = is_active or $5, updated_at = now()
     where id = $1`,
    [environmentId, e.status, e.containerId, e.containerName, e.reactivate],
  );
}

export async function setEnvironmentError(client: Client, environmentId: string): Promise<void> {
  await client.query("update environments set status = 'error', updated_at = now() where id = $1", [environmentId]);
}

/** The pending backup of this operation: whether its files go to the backup store, and which arrived there; locked until the result is written. */
export async function lockBackupStorage(client: Client, deploymentId: string) {
  const { rows } = await client.query<{ storage: string | null; stored_files: unknown }>(
    `select storage, stored_files from backups where deployment_id = $1 and status = 'pending' for update`,
    [deploymentId],
  );
  return rows[0];
}

export async function finishBackup(
  client: Client,
  deploymentId: string,
  b: { ok: boolean; files: unknown[] | null; sizeBytes: number | null; errorMessage: string | null; ts: string },
): Promise<void> {
  await client.query(
    `update backups set status = $2, files = $3, size_bytes = $4, error_message = $5, completed_at = $6::timestamptz
     where deployment_id = $1 and status = 'pending'`,
    [deploymentId, b.ok ? "completed" : "failed", b.files === null ? null : JSON.stringify(b.files), b.sizeBytes, b.errorMessage, b.ts],
  );
}

/** The environment's database has the administrator login password of `version` (its set_at), unless it was rotated since. */
export async function adminLoginApplied(client: Client, environmentId: string, version: string): Promise<void> {
  await client.query(`update environments set admin_login_applied_at = $2::timestamptz where id = $1 and admin_login_set_at = $2::timestamptz`, [
    environmentId,
    version,
  ]);
}

/** The restore-once rule (platform spec 4.3): a deploy restored the migration's backup; later ones keep the data. */
export async function migrationRestored(client: Client, environmentId: string, ts: string): Promise<void> {
  await client.query(`update environments set migration_restore_completed = true, migration_restore_completed_at = $2::timestamptz where id = $1 and migration_id is not null`, [
    environmentId,
    ts,
  ]);
}

/** A deploy's module results as its agent reported them. */
export async function setModulesResult(client: Client, deploymentId: string, modules: unknown[]): Promise<void> {
  await client.query(`update deployments set modules_result = $2::jsonb where id = $1`, [deploymentId, JSON.stringify(modules)]);
}

/** A deploy's module tests as its agent reported them (tests-result.ts). */
export async function setTestsResult(client: Client, deploymentId: string, tests: unknown): Promise<void> {
  await client.query(`update deployments set tests_result = $2::jsonb where id = $1`, [deploymentId, JSON.stringify(tests)]);
}

export interface PreDeployBackup {
  backupId: string;
  createdAt: string;
  deploymentId: string;
  sizeBytes: number | null;
}

/**
 * The environment's pre-deploy snapshots become exactly those its agent reports: the others
 * (pruned by the agent's retention) are removed, new ones recorded as completed backups. A
 * snapshot naming a deployment of another environment, or an id another backup holds, is
 * not recorded.
 */
export async function replacePreDeployBackups(client: Client, organizationId: string, environmentId: string, reported: PreDeployBackup[]): Promise<void> {
  await client.query(
    `with reported as (
       select * from jsonb_to_recordset($3::jsonb) as r(backup_id uuid, created_at timestamptz, deployment_id uuid, size_bytes bigint)
     ), removed as (
       delete from backups b where b.environment_id = $2 and b.backup_type = 'pre_deploy' and b.id not in (select backup_id from reported)
     )
     insert into backups (id, organization_id, environment_id, deployment_id, backup_type, status, size_bytes, files, created_at, completed_at)
     select r.backup_id, $1, $2, r.deployment_id, 'pre_deploy', 'completed', r.size_bytes, '[]'::jsonb, r.created_at, r.created_at
     from reported r join deployments d on d.id = r.deployment_id and d.environment_id = $2
     on conflict (id) do update set size_bytes = excluded.size_bytes
       where backups.environment_id = excluded.environment_id and backups.backup_type = 'pre_deploy'`,
    [
      organizationId,
      environmentId,
      JSON.stringify(reported.map((b) => ({ backup_id: b.backupId, created_at: b.createdAt, deployment_id: b.deploymentId, size_bytes: b.sizeBytes }))),
    ],
  );
}

/** A pre-deploy snapshot a failed deploy rolled back to: it is now the live database, no longer a backup. */
export async function removePreDeployBackup(client: Client, environmentId: string, backupId: string): Promise<void> {
  await client.query(`delete from backups where id = $1 and environment_id = $2 and backup_type = 'pre_deploy'`, [backupId, environmentId]);
}
