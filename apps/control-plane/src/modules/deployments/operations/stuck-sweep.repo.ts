// The stuck sweep's writes, in the sweep's transaction.
import type pg from "pg";
import { CANCEL_CHANNEL } from "../../agents/channels.ts";
import { ACTIVE_STATUSES } from "./deployment-state.ts";

type Client = Pick<pg.PoolClient, "query">;

export interface StuckRow {
  id: string;
  organization_id: string;
  environment_id: string;
  previous_status: string;
  current_step: string | null;
}

/** Fails every active operation that started (or was created) over `timeoutSeconds` ago; skips rows others hold. */
export async function failStuck(client: Client, now: Date, timeoutSeconds: number, message: string): Promise<StuckRow[]> {
  const { rows } = await client.query<StuckRow>(
    `with stuck as (
       select id, status from deployments
       where status = any($1::text[]) and coalesce(started_at, created_at) < $2::timestamptz - make_interval(secs => $3)
       for update skip locked
     )
     update deployments d set status = 'failed', completed_at = $2, error_message = $4
     from stuck where d.id = stuck.id
     returning d.id, d.organization_id, d.environment_id, stuck.status as previous_status, d.current_step`,
    [[...ACTIVE_STATUSES], now, timeoutSeconds, message],
  );
  return rows;
}

/** Withdraws the operations' commands still in the outbox; those the agent took are announced on the cancel channel. */
export async function withdrawCommands(client: Client, deploymentIds: string[], now: Date): Promise<void> {
  await client.query("update agent_commands set state = 'cancelled', completed_at = $2 where deployment_id = any($1::uuid[]) and state = 'pending'", [deploymentIds, now]);
  const { rows: taken } = await client.query<{ server_id: string; command_id: string }>(
    "select server_id, command_id from agent_commands where deployment_id = any($1::uuid[]) and state = 'accepted'",
    [deploymentIds],
  );
  for (const c of taken) await client.query("select pg_notify($1, $2)", [CANCEL_CHANNEL, `${c.server_id}:${c.command_id}`]);
}

export async function setEnvironmentsError(client: Client, environmentIds: string[], now: Date): Promise<void> {
  await client.query("update environments set status = 'error', updated_at = $2 where id = any($1::uuid[])", [environmentIds, now]);
}
