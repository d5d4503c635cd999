// The organisation event stream as stored: the write side, the reads of the live hub and
// the pruning of old events. Log lines go to deployment_logs (they
// are also the deployment's log history); other live events (status changes, server
// figures, migration progress) go to org_events. Both are written inside the caller's
// transaction and announced with one NOTIFY per organisation, delivered at commit, so a
// subscriber on any replica reads exactly what was committed.
import type pg from "pg";
import { deleteInChunks } from "../../db/chunked-delete.ts";

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

/** Rows per delete statement, so one prune never holds a long transaction (it would hold back every stream). */
const PRUNE_CHUNK = 5000;

/** Deletes org_events written before `before` (of one type, or of any), in chunks; how many went. */
export async function pruneOrgEventsBefore(client: Queryable, before: Date, type?: string): Promise<number> {
  const where = type === undefined ? "created_at < $1" : "type = $2 and created_at < $1";
  return deleteInChunks(client, `delete from org_events where id in (select id from org_events where ${where} limit ${PRUNE_CHUNK})`, type === undefined ? [before] : [before, type], PRUNE_CHUNK);
}

// One round trip: the next page of each table below the oldest running writer's xid
// (xmin), the xmin itself, and whether rows above it wait (read again when it finishes):
// the newest tx of each table by a backward index scan, never a scan of the rows above.
// Log lines come back as plain columns; JSON is built in Node (json_build_object and
// to_char cost PostgreSQL several times the read itself).
const READ_SQL = `
with h as materialized (select pg_snapshot_xmin(pg_current_snapshot()) as xmin)
select k, tx::text as tx, id::text as id, project_id, type, data, deployment_id, level, message, step, ms from (
  (select 0 as k, l.tx, l.id, d.project_id::text as project_id, null as type, null as data,
     l.deployment_id::text as deployment_id, l.level, l.message, l.step, (extract(epoch from l.ts) * 1000)::bigint::text as ms
   from (select * from deployment_logs
         where organization_id = $1 and (tx, id) > ($2::xid8, $3::bigint) and tx < (select xmin from h)
         order by tx, id limit $6) l
   left join deployments d on d.id = l.deployment_id)
  union all
  (select 1 as k, e.tx, e.id, e.data->>'project_id', e.type, e.data::text, null, null, null, null, null
   from org_events e
   where e.organization_id = $1 and (e.tx, e.id) > ($4::xid8, $5::bigint) and e.tx < (select xmin from h)
   order by e.tx, e.id limit $6)
  union all
  (select 2, xmin,
     (coalesce((select tx from deployment_logs where organization_id = $1 order by tx desc, id desc limit 1) >= h.xmin, false)
      or coalesce((select tx from org_events where organization_id = $1 order by tx desc, id desc limit 1) >= h.xmin, false))::int::bigint,
     null, null, null, null, null, null, null, null
   from h)
) r`;

/** A row of READ_SQL: k 0 a log line, 1 an event, 2 the xmin (tx) and whether rows wait above it (id 1). */
export type StreamRow = {
  k: number;
  tx: string;
  id: string;
  project_id: string | null;
  type: string | null;
  data: string | null;
  deployment_id: string | null;
  level: string | null;
  message: string | null;
  step: string | null;
  ms: string | null;
};

/** The next page of an organisation's log lines and events after two positions, below the oldest running writer. */
export async function readStream(client: Queryable, orgId: string, log: { tx: bigint; id: bigint }, ev: { tx: bigint; id: bigint }, limit: number): Promise<StreamRow[]> {
  return (await client.query<StreamRow>(READ_SQL, [orgId, log.tx.toString(), log.id.toString(), ev.tx.toString(), ev.id.toString(), limit])).rows;
}

/** The current snapshot's xmin and xmax: where a stream opened now starts, and how far ids go. */
export async function currentSnapshot(client: Queryable): Promise<{ xmin: bigint; xmax: bigint }> {
  const { rows } = await client.query<{ xmin: string; xmax: string }>("select pg_snapshot_xmin(s)::text as xmin, pg_snapshot_xmax(s)::text as xmax from pg_current_snapshot() s");
  return { xmin: BigInt(rows[0]!.xmin), xmax: BigInt(rows[0]!.xmax) };
}
