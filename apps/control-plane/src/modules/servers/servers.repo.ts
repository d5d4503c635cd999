// SQL for servers, and for the capacity view of an organisation's servers. environment_count counts active environments of live projects; status
// comes from the live link (a session held by a replica, seen recently), not a flag.
import { and, count, eq, isNull, sql } from "drizzle-orm";
import { servers, serverStats, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import type { StoredProxy } from "../routing/routing-view.ts";

/** A server whose replica died without closing its session counts as offline after this. */
export const STALE_AFTER_SECONDS = 45;

/** A server's status from the live link (a session held by a replica, seen lately), for the servers row `s`. */
const statusOf = (s: string) => `case
  when ${s}.enrolled_at is null then 'pending'
  when exists (select 1 from agent_sessions a where a.server_id = ${s}.id)
       and ${s}.last_seen_at > now() - make_interval(secs => ${STALE_AFTER_SECONDS}) then 'online'
  else 'offline' end`;

export interface CapacityServerRow {
  id: string;
  name: string;
  hostname: string | null;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  agent_version: string | null;
  proxy: StoredProxy | null;
  status: "pending" | "online" | "offline";
  last_seen_at: Date | null;
  created_at: Date;
  sampled_at: Date | null;
  cpu_percent: number | null;
  ram_used_mb: number | null;
  ram_total_mb: number | null;
  disk_used_gb: number | null;
  disk_total_gb: number | null;
  load1: number | null;
  load5: number | null;
  load15: number | null;
  containers_running: number | null;
  containers_total: number | null;
}

export interface PlacedEnvironmentRow {
  id: string;
  name: string;
  status: string;
  project_id: string;
  project_name: string;
  server_id: string;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
}

export interface StatsPointRow {
  ts: string;
  cpu_percent: number;
  ram_used_mb: number;
  ram_total_mb: number;
  disk_used_gb: number;
  disk_total_gb: number;
  load1: number;
}

const columns = {
  id: servers.id,
  organizationId: servers.organizationId,
  name: servers.name,
  provider: servers.provider,
  region: servers.region,
  hostname: servers.hostname,
  cpuCores: servers.cpuCores,
  ramMb: servers.ramMb,
  diskGb: servers.diskGb,
  agentVersion: servers.agentVersion,
  proxy: sql<StoredProxy | null>`${servers.proxy}`,
  lastSeenAt: servers.lastSeenAt,
  enrolledAt: servers.enrolledAt,
  createdAt: servers.createdAt,
  status: sql<string>`${sql.raw(statusOf('"servers"'))}`,
  environmentCount: sql<number>`(select count(*)::int from environments e join projects p on p.id = e.project_id
    where e.server_id = "servers"."id" and e.is_active and p.deleted_at is null)`,
  stats: serverStats,
};

export function createServersRepo(db: Database) {
  const pool = db.$client;
  const visible = (organizationId: string) => [eq(servers.organizationId, organizationId), isNull(servers.deletedAt)];
  const base = () => db.select(columns).from(servers).leftJoin(serverStats, eq(serverStats.serverId, servers.id));
  return {
    async get(organizationId: string, id: string) {
      const [row] = await base().where(and(eq(servers.id, id), ...visible(organizationId)));
      return row;
    },
    async list(organizationId: string, limit: number, after?: CursorPosition) {
      const rows = await base()
        .where(and(...visible(organizationId), olderThan(servers.createdAt, servers.id, after)))
        .orderBy(...newestFirst(servers.createdAt, servers.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(servers).where(and(...visible(organizationId)));
      return { rows, total: total?.n ?? 0 };
    },

    /** Every live server of the organisation with its latest figures and status, by name (the capacity view). */
    async withFigures(organizationId: string): Promise<CapacityServerRow[]> {
      const { rows } = await pool.query<CapacityServerRow>(
        `select s.id, s.name, s.hostname, s.cpu_cores, s.ram_mb, s.disk_gb, s.agent_version, s.proxy, ${statusOf("s")} as status,
           s.last_seen_at, s.created_at, st.sampled_at, st.cpu_percent, st.ram_used_mb, st.ram_total_mb, st.disk_used_gb,
           st.disk_total_gb, st.load1, st.load5, st.load15, st.containers_running, st.containers_total
         from servers s left join server_stats st on st.server_id = s.id
         where s.organization_id = $1 and s.deleted_at is null
         order by s.name, s.id`,
        [organizationId],
      );
      return rows;
    },

    async exists(organizationId: string, serverId: string): Promise<boolean> {
      const { rows } = await pool.query("select 1 from servers where id = $1 and organization_id = $2 and deleted_at is null", [serverId, organizationId]);
      return rows.length > 0;
    },

    /** Active environments of live projects, each with the server it runs on. */
    async placedEnvironments(organizationId: string): Promise<PlacedEnvironmentRow[]> {
      const { rows } = await pool.query<PlacedEnvironmentRow>(
        `select e.id, e.name, e.status, p.id as project_id, p.name as project_name, coalesce(e.server_id, p.server_id) as server_id,
           e.cpu_cores, e.ram_mb, e.disk_gb
         from environments e join projects p on p.id = e.project_id
         where e.organization_id = $1 and e.is_active and p.deleted_at is null and coalesce(e.server_id, p.server_id) is not null
         order by p.name, e.name`,
        [organizationId],
      );
      return rows;
    },

    /** The server's samples since a time, oldest first (kept as server.stats events). */
    async statsHistory(organizationId: string, serverId: string, since: Date): Promise<StatsPointRow[]> {
      const { rows } = await pool.query<StatsPointRow>(
        `select data->>'ts' as ts, (data->>'cpu_percent')::float8 as cpu_percent, (data->>'ram_used_mb')::float8 as ram_used_mb,
           (data->>'ram_total_mb')::float8 as ram_total_mb, (data->>'disk_used_gb')::float8 as disk_used_gb,
           (data->>'disk_total_gb')::float8 as disk_total_gb, (data->>'load1')::float8 as load1
         from org_events
         where type = 'server.stats' and data->>'server_id' = $2 and created_at > $3 and organization_id = $1
         order by created_at, id`,
        [organizationId, serverId, since],
      );
      return rows;
    },
  };
}
export type ServersRepo = ReturnType<typeof createServersRepo>;
export type ServerRow = NonNullable<Awaited<ReturnType<ServersRepo["get"]>>>;
