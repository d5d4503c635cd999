// SQL for servers. environment_count counts active environments of live projects; status
// comes from the live link (a session held by a replica, seen recently), not a flag.
import { and, count, eq, isNull, sql } from "drizzle-orm";
import { servers, serverStats, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";

/** A server whose replica died without closing its session counts as offline after this. */
export const STALE_AFTER_SECONDS = 45;

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
  lastSeenAt: servers.lastSeenAt,
  enrolledAt: servers.enrolledAt,
  createdAt: servers.createdAt,
  status: sql<string>`case
    when "servers"."enrolled_at" is null then 'pending'
    when exists (select 1 from agent_sessions a where a.server_id = "servers"."id")
         and "servers"."last_seen_at" > now() - make_interval(secs => ${STALE_AFTER_SECONDS}) then 'online'
    else 'offline' end`,
  environmentCount: sql<number>`(select count(*)::int from environments e join projects p on p.id = e.project_id
    where e.server_id = "servers"."id" and e.is_active and p.deleted_at is null)`,
  stats: serverStats,
};

export function createServersRepo(db: Database) {
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
  };
}
export type ServersRepo = ReturnType<typeof createServersRepo>;
export type ServerRow = NonNullable<Awaited<ReturnType<ServersRepo["get"]>>>;
