// Folds agent events into operation rows and environments, inside the ingest transaction,
// so progress, status and the stored events can never disagree. Only fresh events arrive
// here (the ingest watermark drops resends), so counting finished steps is safe.
import type pg from "pg";
import type { CommandResultEvent, Event } from "@berth/protocol";
import type { EventApplier } from "../agents/event-ingest.ts";

const DEPLOY_KINDS = ["deploy", "redeploy", "rollback"];
const ACTIVE = "('pending', 'queued', 'building', 'deploying', 'running')";

/** Environment status after an operation of this kind succeeded. */
const STATUS_AFTER_SUCCESS: Record<string, string> = {
  deploy: "running",
  redeploy: "running",
  rollback: "running",
  restart: "running",
  start: "running",
  stop: "stopped",
  restore: "running",
};

export const applyDeploymentEvents: EventApplier = async (client, _serverId, fresh) => {
  for (const e of fresh) {
    switch (e.kind) {
      case "step.started":
        if (e.deployment_id) await stepStarted(client, e.deployment_id, e.step, e.ts);
        break;
      case "step.finished":
        if (e.deployment_id) await stepFinished(client, e.deployment_id);
        break;
      case "step.failed":
        if (e.deployment_id) {
          await client.query(`update deployments set error_message = $2 where id = $1 and status in ${ACTIVE}`, [e.deployment_id, e.error.message]);
        }
        break;
      case "command.result":
        await commandResult(client, e);
        break;
      default:
        break;
    }
  }
};

async function stepStarted(client: pg.PoolClient, deploymentId: string, step: string, ts: string) {
  const { rows } = await client.query<{ kind: string; environment_id: string }>(
    `update deployments set
       status = case when status in ('pending', 'queued')
                     then (case when kind = any($4::text[]) then 'deploying' else 'running' end) else status end,
       started_at = coalesce(started_at, $3::timestamptz), current_step = $2
     where id = $1 and status in ${ACTIVE}
     returning kind, environment_id`,
    [deploymentId, step, ts, DEPLOY_KINDS],
  );
  const row = rows[0];
  if (row && DEPLOY_KINDS.includes(row.kind)) {
    await client.query("update environments set status = 'deploying', updated_at = now() where id = $1 and status <> 'deploying'", [row.environment_id]);
  }
}

async function stepFinished(client: pg.PoolClient, deploymentId: string) {
  await client.query(
    `update deployments set steps_completed = steps_completed + 1,
       progress_percent = least(100, ((steps_completed + 1) * 100) / greatest(total_steps, 1))
     where id = $1 and status in ${ACTIVE}`,
    [deploymentId],
  );
}

async function commandResult(client: pg.PoolClient, r: CommandResultEvent) {
  const { rows: found } = await client.query<{ id: string; kind: string; environment_id: string }>(
    `select d.id, d.kind, d.environment_id from agent_commands c join deployments d on d.id = c.deployment_id
     where c.command_id = $1 and d.status in ${ACTIVE} for update of d`,
    [r.command_id],
  );
  const op = found[0];
  if (!op) return;
  const status = r.ok ? (op.kind === "destroy" ? "destroyed" : "success") : r.error?.code === "cancelled" ? "cancelled" : "failed";
  const result = (r.result ?? {}) as { container_id?: string; container_name?: string; image?: string; commit?: string };
  await client.query(
    `update deployments d set status = $2, completed_at = $3::timestamptz, started_at = coalesce(d.started_at, $3::timestamptz),
       error_message = case when $4::text is null then null else coalesce($4, d.error_message) end,
       progress_percent = case when $4::text is null then 100 else d.progress_percent end,
       current_step = case when $4::text is null then 'completed' else d.current_step end,
       container_id = coalesce($5, d.container_id), image_tag = coalesce($6, d.image_tag), git_commit = coalesce(d.git_commit, $7)
     where d.id = $1`,
    [op.id, status, r.ts, r.ok ? null : (r.error?.message ?? "failed"), result.container_id ?? null, result.image ?? null, result.commit ?? null],
  );
  if (op.kind === "backup") await backupResult(client, op.id, r);
  // The deployment a successful rollback replaced is marked rolled_back.
  if (r.ok && op.kind === "rollback") {
    await client.query("update deployments set status = 'rolled_back' where id = (select rollback_from_id from deployments where id = $1) and status = 'success'", [op.id]);
  }
  if (r.ok && op.kind === "destroy") {
    await client.query(
      "update environments set status = 'pending', container_id = null, container_name = null, is_active = false, updated_at = now() where id = $1",
      [op.environment_id],
    );
  } else if (r.ok && STATUS_AFTER_SUCCESS[op.kind]) {
    await client.query(
      `update environments set status = $2, container_id = coalesce($3, container_id), container_name = coalesce($4, container_name),
         is_active = is_active or $5, updated_at = now()
       where id = $1`,
      // A deploy brings a destroyed environment back into use.
      [op.environment_id, STATUS_AFTER_SUCCESS[op.kind], result.container_id ?? null, result.container_name ?? null, DEPLOY_KINDS.includes(op.kind)],
    );
  } else if (status === "failed" && op.kind !== "backup") {
    await client.query("update environments set status = 'error', updated_at = now() where id = $1", [op.environment_id]);
  }
}

async function backupResult(client: pg.PoolClient, deploymentId: string, r: CommandResultEvent) {
  const files = ((r.result ?? {}) as { files?: { size?: number }[] }).files ?? [];
  await client.query(
    `update backups set status = $2, files = $3, size_bytes = $4, error_message = $5, completed_at = $6::timestamptz
     where deployment_id = $1 and status = 'pending'`,
    [deploymentId, r.ok ? "completed" : "failed", r.ok ? JSON.stringify(files) : null, r.ok ? files.reduce((n, f) => n + (f.size ?? 0), 0) : null, r.ok ? null : (r.error?.message ?? "failed"), r.ts],
  );
}

export type { Event };
