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

export interface AppendOptions {
  /**
   * false: no NOTIFY in the caller's transaction; the caller calls `announce` after its commit.
   * A transaction that notifies holds PostgreSQL's notification lock through its commit, WAL
   * flush included, so busy writers (agent event ingestion) announce outside their commit.
   */
  announce?: boolean;
}

/** The NOTIFY for organisations whose events were committed without one (readers also poll). */
export async function announce(client: Queryable, organizationIds: Iterable<string>): Promise<void> {
  await notifyEach(client, EVENTS_CHANNEL, [...new Set(organizationIds)]);
}

/** One NOTIFY on `channel` per payload, in one statement. */
export async function notifyEach(client: Queryable, channel: string, payloads: string[]): Promise<void> {
  if (payloads.length === 0) return;
  await client.query({ name: "notify-each", text: "select pg_notify($1, p) from unnest($2::text[]) as p", values: [channel, payloads] });
}

/** Appends log entries of one organisation's deployments (one statement for the batch, its NOTIFY included). */
export async function appendLogs(client: Queryable, organizationId: string, entries: LogEntry[]): Promise<void> {
  await appendLogsOfOrgs(client, entries.map((e) => ({ ...e, organizationId })));
}

/** Appends log entries of any organisations' deployments in one statement, one NOTIFY per organisation. */
export async function appendLogsOfOrgs(
  client: Queryable,
  entries: (LogEntry & { organizationId: string })[],
  options: AppendOptions = {},
): Promise<void> {
  if (entries.length === 0) return;
  const n = entries.length;
  const cols = {
    o: new Array<string>(n),
    d: new Array<string>(n),
    t: new Array<string>(n),
    l: new Array<string>(n),
    m: new Array<string>(n),
    s: new Array<string | null>(n),
    x: new Array<string | null>(n),
  };
  for (let i = 0; i < n; i++) {
    const e = entries[i]!;
    cols.o[i] = e.organizationId;
    cols.d[i] = e.deploymentId;
    cols.t[i] = e.ts;
    cols.l[i] = e.level;
    cols.m[i] = e.message;
    cols.s[i] = e.step;
    cols.x[i] = e.data ? JSON.stringify(e.data) : null;
  }
  // Arrays rather than one JSON document: PostgreSQL spends about half the time on them.
  await client.query(
    `with ins as (
       insert into deployment_logs (organization_id, deployment_id, ts, level, message, step, data)
       select r.o, r.d, r.t, r.l, r.m, r.s, coalesce(r.x, '{}'::jsonb)
       from unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) as r(o, d, t, l, m, s, x))
     select pg_notify($8, o) from unnest($9::text[]) as o`,
    [cols.o, cols.d, cols.t, cols.l, cols.m, cols.s, cols.x, EVENTS_CHANNEL, options.announce === false ? [] : distinct(cols.o)],
  );
}

export interface OrgEvent {
  organizationId: string;
  type: string;
  data: Record<string, unknown>;
}

/** Appends one live event (e.g. deployment.status, server.stats) for an organisation, its NOTIFY in the same statement. */
export async function appendOrgEvent(client: Queryable, organizationId: string, type: string, data: Record<string, unknown>): Promise<void> {
  await appendOrgEvents(client, [{ organizationId, type, data }]);
}

/** Appends live events of any organisations in one statement, one NOTIFY per organisation. */
export async function appendOrgEvents(client: Queryable, events: OrgEvent[], options: AppendOptions = {}): Promise<void> {
  if (events.length === 0) return;
  const orgs = events.map((e) => e.organizationId);
  // Named: parsed and planned once per connection (server figures come many times a second).
  await client.query({
    name: "append-org-events",
    text: `with ins as (
             insert into org_events (organization_id, type, data)
             select * from unnest($1::uuid[], $2::text[], $3::jsonb[]))
           select pg_notify($4, o) from unnest($5::text[]) as o`,
    values: [orgs, events.map((e) => e.type), events.map((e) => JSON.stringify(e.data)), EVENTS_CHANNEL, options.announce === false ? [] : distinct(orgs)],
  });
}

function distinct(values: string[]): string[] {
  return [...new Set(values)];
}
