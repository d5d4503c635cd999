// SQL behind the dashboard: the capacity view of an organisation's servers, one server's
// recent figures, and the projects and environments a person can see.
import type pg from "pg";
import { STALE_AFTER_SECONDS } from "../servers/servers.repo.ts";

export interface CapacityServerRow {
  id: string;
  name: string;
  hostname: string | null;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  agent_version: string | null;
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

export interface ProjectRow {
  id: string;
  name: string;
  erp_version: string | null;
  org_role: string | null;
  project_role: string | null;
}

export interface EnvironmentRow {
  id: string;
  project_id: string;
  name: string;
  status: string;
  git_branch: string;
  domain: string | null;
  auto_deploy: boolean;
  server_id: string | null;
  server_name: string | null;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  last_id: string | null;
  last_kind: string | null;
  last_status: string | null;
  last_version: number | null;
  last_created_at: Date | null;
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

// The same rule as the servers repo: online means a replica holds the link and saw it lately.
const STATUS = `case
  when s.enrolled_at is null then 'pending'
  when exists (select 1 from agent_sessions a where a.server_id = s.id)
       and s.last_seen_at > now() - make_interval(secs => ${STALE_AFTER_SECONDS}) then 'online'
  else 'offline' end`;

export function createDashboardRepo(pool: pg.Pool) {
  return {
    async servers(organizationId: string): Promise<CapacityServerRow[]> {
      const { rows } = await pool.query<CapacityServerRow>(
        `select s.id, s.name, s.hostname, s.cpu_cores, s.ram_mb, s.disk_gb, s.agent_version, ${STATUS} as status,
           s.last_seen_at, s.created_at, st.sampled_at, st.cpu_percent, st.ram_used_mb, st.ram_total_mb, st.disk_used_gb,
           st.disk_total_gb, st.load1, st.load5, st.load15, st.containers_running, st.containers_total
         from servers s left join server_stats st on st.server_id = s.id
         where s.organization_id = $1 and s.deleted_at is null
         order by s.name, s.id`,
        [organizationId],
      );
      return rows;
    },

    async server(organizationId: string, serverId: string): Promise<{ id: string } | undefined> {
      const { rows } = await pool.query<{ id: string }>("select id from servers where id = $1 and organization_id = $2 and deleted_at is null", [
        serverId,
        organizationId,
      ]);
      return rows[0];
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

    /** Projects of the organisation with the person's stored roles; `all` lists every project (org admins and up). */
    async projects(organizationId: string, userId: string, all: boolean): Promise<ProjectRow[]> {
      const { rows } = await pool.query<ProjectRow>(
        `select pr.id, pr.name, pr.erp_version, m.role as org_role, pm.role as project_role
         from projects pr
         left join memberships m on m.organization_id = pr.organization_id and m.user_id = $2
         left join project_memberships pm on pm.project_id = pr.id and pm.user_id = $2
         where pr.organization_id = $1 and pr.deleted_at is null and ($3 or pm.user_id is not null)
         order by pr.name, pr.id`,
        [organizationId, userId, all],
      );
      return rows;
    },

    async environments(projectIds: string[]): Promise<EnvironmentRow[]> {
      if (projectIds.length === 0) return [];
      const { rows } = await pool.query<EnvironmentRow>(
        `select e.id, e.project_id, e.name, e.status, e.git_branch, e.domain, e.auto_deploy, s.id as server_id, s.name as server_name,
           e.cpu_cores, e.ram_mb, e.disk_gb, d.id as last_id, d.kind as last_kind, d.status as last_status, d.version as last_version,
           d.created_at as last_created_at
         from environments e
         join projects p on p.id = e.project_id
         left join servers s on s.id = coalesce(e.server_id, p.server_id)
         left join lateral (select id, kind, status, version, created_at from deployments
                            where environment_id = e.id order by created_at desc, id desc limit 1) d on true
         where e.project_id = any($1::uuid[]) and e.is_active
         order by e.name, e.id`,
        [projectIds],
      );
      return rows;
    },

    /** The project of an environment, for the permission check. */
    async environmentProject(environmentId: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ project_id: string }>("select project_id from environments where id = $1", [environmentId]);
      return rows[0]?.project_id;
    },
  };
}
export type DashboardRepo = ReturnType<typeof createDashboardRepo>;
