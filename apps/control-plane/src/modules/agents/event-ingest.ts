// Stores agents' event batches durably, then says how far to acknowledge each. The server's
// watermark (highest seq stored) and the (server_id, seq) key make resends harmless: an
// event is stored once however often it arrives.
//
// Group commit: batches that arrive while a write is in flight wait and go together in the
// next transaction, a few set-based statements for all of them. Ten thousand agents sending
// stats every 10 s are then a few dozen commits a second, not a thousand; an idle control
// plane still writes a lone batch at once. At most `concurrency` writes run at a time, so
// ingestion never holds more than that many of the pool's connections.
import type pg from "pg";
import type { CommandResultEvent, Event, LogEvent, StatsEvent } from "@berth/protocol";
import { announce, appendLogsOfOrgs, appendOrgEvents, type LogEntry, type OrgEvent } from "../events/event-log.repo.ts";

export interface EventIngest {
  /** Resolves with the seq to acknowledge (everything up to it is stored). */
  ingest(serverId: string, events: Event[]): Promise<number>;
}

/** Called inside the ingest transaction with a server's fresh (never seen) events, for derived state. */
export type EventApplier = (client: pg.PoolClient, serverId: string, fresh: Event[], organizationId: string) => Promise<void>;

export interface IngestOptions {
  pool: pg.Pool;
  /** Where the live-event NOTIFY goes after each commit (a relaxed pool: it writes nothing). */
  announcePool?: pg.Pool;
  appliers?: EventApplier[];
  /** Writes in flight at once (each holds one pool connection). */
  concurrency?: number;
  /** A write takes waiting batches until it holds about this many events. */
  maxEventsPerWrite?: number;
}

interface Batch {
  serverId: string;
  events: Event[];
  resolve(upTo: number): void;
  reject(err: unknown): void;
}

/** A deployment's log lines live in deployment_logs (its history and the live stream), not agent_events. */
const isDeploymentLog = (e: Event): e is LogEvent & { deployment_id: string } => e.kind === "log" && e.deployment_id !== null;

export class UnknownServerError extends Error {
  constructor(serverId: string) {
    super(`server ${serverId} does not exist (deleted while its agent was connected?)`);
    this.name = "UnknownServerError";
  }
}

export function createEventIngest(opts: IngestOptions): EventIngest {
  const concurrency = opts.concurrency ?? 3;
  const maxEvents = opts.maxEventsPerWrite ?? 10_000;
  const waiting: Batch[] = [];
  let running = 0;
  /** Servers whose agent_streams row exists (rows are never deleted). */
  const streams = new Set<string>();

  function take(): Batch[] {
    const taken: Batch[] = [];
    let events = 0;
    while (waiting.length > 0 && (taken.length === 0 || events + waiting[0]!.events.length <= maxEvents)) {
      const batch = waiting.shift()!;
      events += batch.events.length;
      taken.push(batch);
    }
    return taken;
  }

  function pump() {
    while (running < concurrency && waiting.length > 0) {
      const batches = take();
      running++;
      void settle(batches).finally(() => {
        running--;
        pump();
      });
    }
  }

  async function settle(batches: Batch[]) {
    let results: (number | Error)[];
    try {
      results = await write(opts, streams, batches, false);
    } catch (err) {
      if (batches.length === 1 && !isDuplicate(err)) return batches[0]!.reject(err);
      // One agent's bad batch must not fail the others': write each on its own, and
      // tolerate rows already stored (see storeEvents).
      results = [];
      for (const batch of batches) {
        results.push(await write(opts, streams, [batch], true).then((r) => r[0]!, (e: unknown) => (e instanceof Error ? e : new Error(String(e)))));
      }
    }
    batches.forEach((batch, i) => {
      const result = results[i]!;
      if (typeof result === "number") batch.resolve(result);
      else batch.reject(result);
    });
  }

  return {
    ingest(serverId, events) {
      return new Promise<number>((resolve, reject) => {
        waiting.push({ serverId, events, resolve, reject });
        pump();
      });
    },
  };
}

const isDuplicate = (err: unknown) => (err as { code?: string } | null)?.code === "23505";

/**
 * One transaction for all the batches; per batch, the seq to acknowledge or why it cannot be
 * stored. `tolerant`: rows already in agent_events are skipped instead of failing the write.
 */
async function write(opts: IngestOptions, streams: Set<string>, batches: Batch[], tolerant: boolean): Promise<(number | Error)[]> {
  const client = await opts.pool.connect();
  try {
    await client.query("begin");
    // The streams' rows (made with a server's first events) locked in id order: no deadlocks
    // between concurrent writes. The server rows themselves are only read.
    const ids = [...new Set(batches.map((b) => b.serverId))].sort();
    const unknown = ids.filter((id) => !streams.has(id));
    if (unknown.length > 0) {
      await client.query(
        `insert into agent_streams (server_id)
         select id from servers where id = any($1::uuid[]) and not exists (select 1 from agent_streams where server_id = servers.id)
         on conflict do nothing`,
        [unknown],
      );
    }
    // Named statements (here and below) are parsed and planned once per connection.
    const { rows } = await client.query<{ id: string; last_event_seq: string; organization_id: string }>({
      name: "ingest-lock-streams",
      text: `select st.server_id as id, st.last_event_seq, s.organization_id
             from agent_streams st join servers s on s.id = st.server_id
             where st.server_id = any($1::uuid[]) order by st.server_id for update of st`,
      values: [ids],
    });

    const servers = new Map(rows.map((r) => [r.id, { watermark: Number(r.last_event_seq), organizationId: r.organization_id, fresh: [] as Event[] }]));

    const results: (number | Error)[] = [];
    const stored: StoredEvent[] = [];
    const logs: (LogEntry & { organizationId: string })[] = [];
    const commandResults: { server: string; e: CommandResultEvent }[] = [];
    const stats = new Map<string, StatsEvent>();
    for (const batch of batches) {
      const server = servers.get(batch.serverId);
      if (!server) {
        results.push(new UnknownServerError(batch.serverId));
        continue;
      }
      for (const e of batch.events) {
        if (e.seq <= server.watermark) continue;
        server.watermark = e.seq;
        server.fresh.push(e);
        if (e.kind === "stats") stats.set(batch.serverId, e);
        else if (isDeploymentLog(e)) logs.push(logEntry(server.organizationId, e));
        else stored.push({ server: batch.serverId, body: withoutNul(JSON.stringify(e)) });
        if (e.kind === "command.result") commandResults.push({ server: batch.serverId, e });
      }
      results.push(server.watermark);
    }

    await storeEvents(client, stored, tolerant);
    await appendLogsOfOrgs(client, logs, { announce: false });
    await storeStats(client, [...stats].map(([serverId, s]) => ({ serverId, organizationId: servers.get(serverId)!.organizationId, s })));
    await storeResults(client, commandResults);
    const advanced = [...servers].filter(([, s]) => s.fresh.length > 0);
    for (const [serverId, s] of advanced) {
      for (const apply of opts.appliers ?? []) await apply(client, serverId, s.fresh, s.organizationId);
    }
    if (advanced.length > 0) {
      await client.query({
        name: "ingest-advance-streams",
        text: "update agent_streams st set last_event_seq = v.seq from unnest($1::uuid[], $2::bigint[]) as v(id, seq) where st.server_id = v.id",
        values: [advanced.map(([id]) => id), advanced.map(([, s]) => s.watermark)],
      });
    }
    await client.query("commit");
    // Known only once committed: a rolled-back write may have made the rows it saw.
    if (streams.size > 100_000) streams.clear();
    for (const r of rows) streams.add(r.id);
    // Live readers hear of the new rows now; one that misses this reads them at its next poll.
    const orgs = [...logs.map((l) => l.organizationId), ...[...stats.keys()].map((id) => servers.get(id)!.organizationId)];
    if (orgs.length > 0) void announce(opts.announcePool ?? opts.pool, orgs).catch(() => {});
    return results;
  } catch (err) {
    await client.query("rollback").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * PostgreSQL stores no NUL character in text or jsonb, and a container may print one: such
 * an event would fail its batch on every resend and stall the agent's stream for good. It is
 * stored with U+FFFD in place of each NUL instead. Takes and returns JSON text.
 */
function withoutNul(json: string): string {
  return json.includes("\\u0000") ? json.replace(/(?<!\\)((?:\\\\)*)\\u0000/g, "$1\\ufffd") : json;
}

function logEntry(organizationId: string, e: LogEvent & { deployment_id: string }): LogEntry & { organizationId: string } {
  const message = e.message.includes("\0") ? e.message.replaceAll("\0", "\ufffd") : e.message;
  const data = e.data ? (JSON.parse(withoutNul(JSON.stringify(e.data))) as Record<string, unknown>) : undefined;
  return { organizationId, deploymentId: e.deployment_id, ts: e.ts, level: e.level, message, step: e.step, ...(data ? { data } : {}) };
}

function jsonOrNull(value: unknown): string | null {
  return value === undefined || value === null ? null : withoutNul(JSON.stringify(value));
}

interface StoredEvent {
  server: string;
  /** The event as JSON, NUL-free. */
  body: string;
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
 * write is then retried with it instead of failing on every resend.
 */
async function storeEvents(client: pg.PoolClient, rows: StoredEvent[], tolerant: boolean) {
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

/** The latest figures per server (one row each), and a server.stats live event for dashboards and their charts. */
async function storeStats(client: pg.PoolClient, latest: { serverId: string; organizationId: string; s: StatsEvent }[]) {
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
  const events: OrgEvent[] = latest.map(({ serverId, organizationId, s }) => {
    const { kind: _kind, seq: _seq, ...figures } = s;
    return { organizationId, type: "server.stats", data: { server_id: serverId, ...figures } };
  });
  await appendOrgEvents(client, events, { announce: false });
}

/** A result completes only a command of the server that sent it. */
async function storeResults(client: pg.PoolClient, results: { server: string; e: CommandResultEvent }[]) {
  for (const { server, e: r } of results) {
    await client.query(
      `update agent_commands set state = $3, result = $4, error = $5, completed_at = $6,
         accepted_at = coalesce(accepted_at, $6)
       where command_id = $2 and server_id = $1 and state in ('pending', 'accepted')`,
      [server, r.command_id, r.ok ? "succeeded" : "failed", jsonOrNull(r.result), jsonOrNull(r.error), r.ts],
    );
  }
}
