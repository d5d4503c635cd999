// The stuck-deployment sweep (platform spec 3.1, 8): every 5 minutes, an operation still
// active 1800 s after it started (or was created, if it never started) fails with a timeout
// message, its environment goes to `error`, and an error log entry says why. A command
// still waiting in the outbox is withdrawn; one the agent already took is announced on
// the cancel channel, as a cancel would, so the agent stops at its next step boundary.
import type pg from "pg";
import { ACTIVE_DEPLOYMENT_STATUSES } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";
import { CANCEL_CHANNEL } from "../agents/agent-commands.ts";
import { appendLogs, type LogEntry } from "../events/event-log.repo.ts";

export const STUCK_SWEEP_QUEUE = "deployments.stuck-sweep";
export const STUCK_SWEEP_CRON = "*/5 * * * *";
export const DEPLOYMENT_TIMEOUT_SECONDS = 1800;
export const TIMEOUT_MESSAGE = "Deployment timed out after 30 minutes";

interface Stuck {
  id: string;
  organization_id: string;
  environment_id: string;
  previous_status: string;
  current_step: string | null;
}

/** Fails every stuck operation; returns the ids it failed. */
export async function sweepStuckDeployments(deps: { pool: pg.Pool; clock: Clock }): Promise<string[]> {
  const now = deps.clock.now();
  const client = await deps.pool.connect();
  try {
    await client.query("begin");
    const { rows } = await client.query<Stuck>(
      `with stuck as (
         select id, status from deployments
         where status = any($1::text[]) and coalesce(started_at, created_at) < $2::timestamptz - make_interval(secs => $3)
         for update skip locked
       )
       update deployments d set status = 'failed', completed_at = $2, error_message = $4
       from stuck where d.id = stuck.id
       returning d.id, d.organization_id, d.environment_id, stuck.status as previous_status, d.current_step`,
      [[...ACTIVE_DEPLOYMENT_STATUSES], now, DEPLOYMENT_TIMEOUT_SECONDS, TIMEOUT_MESSAGE],
    );
    if (rows.length > 0) {
      const ids = rows.map((r) => r.id);
      await client.query(
        "update agent_commands set state = 'cancelled', completed_at = $2 where deployment_id = any($1::uuid[]) and state = 'pending'",
        [ids, now],
      );
      const { rows: taken } = await client.query<{ server_id: string; command_id: string }>(
        "select server_id, command_id from agent_commands where deployment_id = any($1::uuid[]) and state = 'accepted'",
        [ids],
      );
      for (const c of taken) await client.query("select pg_notify($1, $2)", [CANCEL_CHANNEL, `${c.server_id}:${c.command_id}`]);
      await client.query("update environments set status = 'error', updated_at = $2 where id = any($1::uuid[])", [
        [...new Set(rows.map((r) => r.environment_id))],
        now,
      ]);
      const byOrg = new Map<string, LogEntry[]>();
      for (const r of rows) {
        const entries = byOrg.get(r.organization_id) ?? [];
        entries.push({
          deploymentId: r.id,
          ts: now.toISOString(),
          level: "error",
          message: TIMEOUT_MESSAGE,
          step: r.current_step,
          data: { timeout_seconds: DEPLOYMENT_TIMEOUT_SECONDS, previous_status: r.previous_status, failed_by: "stuck-deployment sweep" },
        });
        byOrg.set(r.organization_id, entries);
      }
      for (const [org, entries] of byOrg) await appendLogs(client, org, entries);
    }
    await client.query("commit");
    return rows.map((r) => r.id);
  } catch (err) {
    await client.query("rollback").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}
