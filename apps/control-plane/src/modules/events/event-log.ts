// The write side of the organisation event stream. Log lines go to deployment_logs (they
// are also the deployment's log history); other live events (status changes, server
// figures, migration progress) go to org_events. Both are written inside the caller's
// transaction and announced with one NOTIFY per organisation, delivered at commit, so a
// subscriber on any replica reads exactly what was committed.
import type pg from "pg";

export const EVENTS_CHANNEL = "berth_org_events";

export type LogLevel = "debug" | "info" | "warning" | "error";

export interface LogEntry {
  deploymentId: string;
  ts: string;
  level: LogLevel;
  message: string;
  step: string | null;
  data?: Record<string, unknown>;
}

type Queryable = Pick<pg.PoolClient, "query">;

/** Appends log entries of one organisation's deployments (one statement for the batch). */
export async function appendLogs(client: Queryable, organizationId: string, entries: LogEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const rows = entries.map((e) => ({ d: e.deploymentId, t: e.ts, l: e.level, m: e.message, s: e.step, x: e.data ?? {} }));
  await client.query(
    `insert into deployment_logs (organization_id, deployment_id, ts, level, message, step, data)
     select $1, r.d, r.t, r.l, r.m, r.s, r.x
     from jsonb_to_recordset($2::jsonb) as r(d uuid, t timestamptz, l text, m text, s text, x jsonb)`,
    [organizationId, JSON.stringify(rows)],
  );
  await notify(client, organizationId);
}

/** Appends one live event (e.g. deployment.status, server.stats) for an organisation. */
export async function appendOrgEvent(client: Queryable, organizationId: string, type: string, data: Record<string, unknown>): Promise<void> {
  await client.query("insert into org_events (organization_id, type, data) values ($1, $2, $3)", [organizationId, type, JSON.stringify(data)]);
  await notify(client, organizationId);
}

async function notify(client: Queryable, organizationId: string) {
  // PostgreSQL folds identical notifications of one transaction into one.
  await client.query("select pg_notify($1, $2)", [EVENTS_CHANNEL, organizationId]);
}
