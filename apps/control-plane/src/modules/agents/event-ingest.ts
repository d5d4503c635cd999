// Stores a batch of agent events durably, then says how far to acknowledge. The server's
// watermark (highest seq stored) and the (server_id, seq) key make resends harmless: an
// event is stored once however often it arrives.
import type pg from "pg";
import type { CommandResultEvent, Event, LogEvent, StatsEvent } from "@berth/protocol";
import { appendLogs, appendOrgEvent } from "../events/event-log.ts";

export interface EventIngest {
  /** Returns the seq to acknowledge (everything up to it is stored). */
  ingest(serverId: string, events: Event[]): Promise<number>;
}

/** Called inside the ingest transaction with the fresh (never seen) events, for derived state. */
export type EventApplier = (client: pg.PoolClient, serverId: string, fresh: Event[], organizationId: string) => Promise<void>;

/** A deployment's log lines live in deployment_logs (its history and the live stream), not agent_events. */
const isDeploymentLog = (e: Event): e is LogEvent & { deployment_id: string } => e.kind === "log" && e.deployment_id !== null;

export function createEventIngest(deps: { pool: pg.Pool; appliers?: EventApplier[] }): EventIngest {
  return {
    async ingest(serverId, events) {
      const client = await deps.pool.connect();
      try {
        await client.query("begin");
        const { rows } = await client.query<{ last_event_seq: string; organization_id: string }>(
          "select last_event_seq, organization_id from servers where id = $1 for update",
          [serverId],
        );
        const watermark = Number(rows[0]?.last_event_seq ?? 0);
        const organizationId = rows[0]?.organization_id ?? "";
        const fresh = events.filter((e) => e.seq > watermark);
        if (fresh.length === 0) {
          await client.query("commit");
          return watermark;
        }
        await storeEvents(client, serverId, fresh.filter((e) => e.kind !== "stats" && !isDeploymentLog(e)));
        await appendLogs(
          client,
          organizationId,
          fresh.filter(isDeploymentLog).map((e) => ({ deploymentId: e.deployment_id, ts: e.ts, level: e.level, message: e.message, step: e.step, ...(e.data ? { data: e.data } : {}) })),
        );
        const stats = fresh.filter((e): e is StatsEvent => e.kind === "stats").at(-1);
        if (stats) await storeStats(client, serverId, organizationId, stats);
        await storeResults(client, serverId, fresh.filter((e): e is CommandResultEvent => e.kind === "command.result"));
        for (const apply of deps.appliers ?? []) await apply(client, serverId, fresh, organizationId);
        const top = fresh[fresh.length - 1]!.seq;
        await client.query("update servers set last_event_seq = $2 where id = $1", [serverId, top]);
        await client.query("commit");
        return top;
      } catch (err) {
        await client.query("rollback").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
  };
}

async function storeEvents(client: pg.PoolClient, serverId: string, events: Event[]) {
  if (events.length === 0) return;
  const cols = { seq: [] as number[], kind: [] as string[], ts: [] as string[], cmd: [] as (string | null)[], dep: [] as (string | null)[], level: [] as (string | null)[], body: [] as string[] };
  for (const e of events) {
    cols.seq.push(e.seq);
    cols.kind.push(e.kind);
    cols.ts.push(e.ts);
    cols.cmd.push("command_id" in e ? e.command_id : null);
    cols.dep.push("deployment_id" in e ? e.deployment_id : null);
    cols.level.push(e.kind === "log" ? e.level : null);
    cols.body.push(JSON.stringify(e));
  }
  await client.query(
    `insert into agent_events (server_id, seq, kind, ts, command_id, deployment_id, level, body)
     select $1, * from unnest($2::bigint[], $3::text[], $4::timestamptz[], $5::uuid[], $6::uuid[], $7::text[], $8::jsonb[])
     on conflict do nothing`,
    [serverId, cols.seq, cols.kind, cols.ts, cols.cmd, cols.dep, cols.level, cols.body],
  );
}

async function storeStats(client: pg.PoolClient, serverId: string, organizationId: string, s: StatsEvent) {
  await client.query(
    `insert into server_stats as t (server_id, sampled_at, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb,
       load1, load5, load15, containers_running, containers_total)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     on conflict (server_id) do update set sampled_at = excluded.sampled_at, cpu_percent = excluded.cpu_percent,
       ram_used_mb = excluded.ram_used_mb, ram_total_mb = excluded.ram_total_mb, disk_used_gb = excluded.disk_used_gb,
       disk_total_gb = excluded.disk_total_gb, load1 = excluded.load1, load5 = excluded.load5, load15 = excluded.load15,
       containers_running = excluded.containers_running, containers_total = excluded.containers_total
     where t.sampled_at <= excluded.sampled_at`,
    [serverId, s.ts, s.cpu_percent, Math.round(s.ram_used_mb), Math.round(s.ram_total_mb), s.disk_used_gb, s.disk_total_gb, s.load1, s.load5, s.load15, s.containers_running, s.containers_total],
  );
  // The live figure for dashboards, and the short history behind their charts.
  const { kind: _kind, seq: _seq, ...figures } = s;
  await appendOrgEvent(client, organizationId, "server.stats", { server_id: serverId, ...figures });
}

async function storeResults(client: pg.PoolClient, serverId: string, results: CommandResultEvent[]) {
  for (const r of results) {
    await client.query(
      `update agent_commands set state = $3, result = $4, error = $5, completed_at = $6,
         accepted_at = coalesce(accepted_at, $6)
       where command_id = $2 and server_id = $1 and state in ('pending', 'accepted')`,
      [serverId, r.command_id, r.ok ? "succeeded" : "failed", r.result ?? null, r.error ?? null, r.ts],
    );
  }
}
