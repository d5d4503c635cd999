// The statements of event ingestion, all inside the ingest transaction (event-ingest.ts
// decides what goes where): the per-server streams and their watermarks, agent_events,
// the latest stats, and command results. Named statements are parsed and planned once
// per connection; the set-based ones take whole arrays, one statement for every batch of
// a group commit.
import type pg from "pg";
import type { StatsEvent } from "@berth/protocol";

type Client = Pick<pg.PoolClient, "query">;

export interface StreamRow {
  id: string;
  /** The highest seq stored (bigint as text). */
  last_event_seq: string;
  organization_id: string;
}

/** An event for agent_events. */
export interface StoredEvent {
  server: string;
  /** The event as JSON, NUL-free. */
  body: string;
}

/** A command's end as its result event tells it. */
export interface CommandEnd {
  serverId: string;
  commandId: string;
  state: "succeeded" | "failed";
  /** JSON text or null. */
  result: string | null;
  /** JSON text or null. */
  error: string | null;
  ts: string;
}

/** Makes the agent_streams rows of those servers that have none (servers that do not exist get none). */
export async function createMissingStreams(client: Client, serverIds: string[]): Promise<void> {
  await client.query(
    `insert into agent_streams (server_id)
     select id from servers where id = any($1::uuid[]) and not exists (select 1 from agent_streams where server_id = servers.id)
     on conflict do nothing`,
    [serverIds],
  );
}

/** Locks the streams' rows in id order (no deadlocks between concurrent writes) and reads each watermark and organisation. */
export async function lockStreams(client: Client, serverIds: string[]): Promise<StreamRow[]> {
  const { rows } = await client.query<StreamRow>({
    name: "ingest-lock-streams",
    text: `select st.server_id as id, st.last_event_seq, s.organization_id
           from agent_streams st join servers s on s.id = st.server_id
           where st.server_id = any($1::uuid[]) order by st.server_id for update of st`,
    values: [serverIds],
  });
  return rows;
}

/** Moves each stream's watermark to its seq. */
export async function advanceStreams(client: Client, serverIds: string[], seqs: number[]): Promise<void> {
  await client.query({
    name: "ingest-advance-streams",
    text: "update agent_streams st set last_event_seq = v.seq from unnest($1::uuid[], $2::bigint[]) as v(id, seq) where st.server_id = v.id",
    values: [serverIds, seqs],
  });
}

/**
 * One JSON document for the whole write, taken apart by PostgreSQL: node-postgres spends
 * about 15 us per row escaping eight parallel arrays, this costs about 3, and PostgreSQL's
 * side is no slower (measured with 10,000-row writes).
 *
 * A plain insert: the watermark, read under the stream's row lock and advanced in the same
 * transaction, already keeps every stored seq out. ON CONFLICT DO NOTHING costs PostgreSQL
 * a speculative insertion per row (measured: 11.7 against 9.1 us of its CPU per row), so it
 * is only the fallback (`tolerant`) should agent_events ever be ahead of the watermark: the
 * write is then retried with it instead of failing on every resend. That key is a UNIQUE
 * (server_id, seq) index on each month partition (migration 0022); a resent event keeps its
 * `ts`, so it meets its stored copy in the same partition.
 */
export async function insertEvents(client: Client, rows: StoredEvent[], tolerant: boolean): Promise<void> {
  if (rows.length === 0) return;
  const servers: string[] = [];
  const position = new Map<string, number>();
  const items = new Array<string>(rows.length);
  rows.forEach(({ server, body }, i) => {
    let at = position.get(server);
    if (at === undefined) {
      at = servers.push(server);
      position.set(server, at);
    }
    items[i] = `[${at},${body}]`;
  });
  await client.query({
    name: tolerant ? "ingest-store-events-tolerant" : "ingest-store-events",
    text: `insert into agent_events (server_id, seq, kind, ts, command_id, deployment_id, level, body)
           select ($1::uuid[])[(x->>0)::int], (e->>'seq')::bigint, e->>'kind', (e->>'ts')::timestamptz,
             (e->>'command_id')::uuid, (e->>'deployment_id')::uuid, case when e->>'kind' = 'log' then e->>'level' end, e
           from jsonb_array_elements($2::jsonb) as x, lateral (select x->1 as e) as item
           ${tolerant ? "on conflict do nothing" : ""}`,
    values: [servers, `[${items.join(",")}]`],
  });
}

/** The latest figures per server (one row each); an older sample never overwrites a newer one. */
export async function upsertStats(client: Client, latest: { serverId: string; s: StatsEvent }[]): Promise<void> {
  if (latest.length === 0) return;
  const col = <T>(f: (s: StatsEvent) => T) => latest.map((l) => f(l.s));
  await client.query({
    name: "ingest-store-stats",
    text: `insert into server_stats as t (server_id, sampled_at, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb,
       load1, load5, load15, containers_running, containers_total)
     select * from unnest($1::uuid[], $2::timestamptz[], $3::float8[], $4::int[], $5::int[], $6::float8[], $7::float8[],
       $8::float8[], $9::float8[], $10::float8[], $11::int[], $12::int[])
     on conflict (server_id) do update set sampled_at = excluded.sampled_at, cpu_percent = excluded.cpu_percent,
       ram_used_mb = excluded.ram_used_mb, ram_total_mb = excluded.ram_total_mb, disk_used_gb = excluded.disk_used_gb,
       disk_total_gb = excluded.disk_total_gb, load1 = excluded.load1, load5 = excluded.load5, load15 = excluded.load15,
       containers_running = excluded.containers_running, containers_total = excluded.containers_total
     where t.sampled_at <= excluded.sampled_at`,
    values: [
      latest.map((l) => l.serverId),
      col((s) => s.ts),
      col((s) => s.cpu_percent),
      col((s) => Math.round(s.ram_used_mb)),
      col((s) => Math.round(s.ram_total_mb)),
      col((s) => s.disk_used_gb),
      col((s) => s.disk_total_gb),
      col((s) => s.load1),
      col((s) => s.load5),
      col((s) => s.load15),
      col((s) => s.containers_running),
      col((s) => s.containers_total),
    ],
  });
}

/**
 * Ends each command, if it is still pending or accepted and belongs to the server named;
 * per end, whether the command is that server's at all (a result naming another server's
 * command ends nothing and is counted as refused).
 */
export async function endCommands(client: Client, ends: CommandEnd[]): Promise<boolean[]> {
  const own: boolean[] = [];
  for (const r of ends) {
    const { rows } = await client.query<{ own: boolean }>(
      `with ended as (
         update agent_commands set state = $3, result = $4, error = $5, completed_at = $6,
           accepted_at = coalesce(accepted_at, $6)
         where command_id = $2 and server_id = $1 and state in ('pending', 'accepted'))
       select exists (select 1 from agent_commands where command_id = $2 and server_id = $1) as own`,
      [r.serverId, r.commandId, r.state, r.result, r.error, r.ts],
    );
    own.push(rows[0]!.own);
  }
  return own;
}

/** A deployment log line as its agent sent it, with the server that sent it. */
export interface AgentLogLine {
  serverId: string;
  deploymentId: string;
  ts: string;
  level: string;
  message: string;
  step: string | null;
  /** JSON text or null. */
  data: string | null;
}

/**
 * Stores agents' deployment log lines, each only if its deployment is an operation of the
 * server that sent it (deployments.server_id), under that deployment's organisation; lines
 * naming any other deployment are not stored. One statement, in order; per server, how
 * many lines it was refused. The organisations stored for are announced by the caller.
 */
export async function storeDeploymentLogs(client: Client, lines: AgentLogLine[]): Promise<{ server_id: string; refused: number; organization_id: string | null }[]> {
  if (lines.length === 0) return [];
  const { rows } = await client.query<{ server_id: string; refused: number; organization_id: string | null }>({
    name: "ingest-store-deployment-logs",
    text: `with line as (
             select r.*, d.organization_id as o
             from unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::jsonb[]) with ordinality as r(srv, dep, t, l, m, s, x, n)
             left join deployments d on d.id = r.dep and d.server_id = r.srv),
           stored as (
             insert into deployment_logs (organization_id, deployment_id, ts, level, message, step, data)
             select o, dep, t, l, m, s, coalesce(x, '{}'::jsonb) from line where o is not null order by n)
           select srv as server_id, (count(*) - count(o))::int as refused, min(o::text) as organization_id from line group by srv`,
    values: [
      lines.map((l) => l.serverId),
      lines.map((l) => l.deploymentId),
      lines.map((l) => l.ts),
      lines.map((l) => l.level),
      lines.map((l) => l.message),
      lines.map((l) => l.step),
      lines.map((l) => l.data),
    ],
  });
  return rows;
}
