// SQL for servers. environment_count counts active environments of live projects.
import { and, count, eq, isNull, sql } from "drizzle-orm";
import { servers, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../lib/keyset.ts";

export type ServerRow = typeof servers.$inferSelect & { environmentCount: number };

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
  status: servers.status,
  lastSeenAt: servers.lastSeenAt,
  createdAt: servers.createdAt,
  deletedAt: servers.deletedAt,
  environmentCount: sql<number>`(select count(*)::int from environments e join projects p on p.id = e.project_id
    where e.server_id = "servers"."id" and e.is_active and p.deleted_at is null)`,
};

export function createServersRepo(db: Database) {
  const visible = (organizationId: string) => [eq(servers.organizationId, organizationId), isNull(servers.deletedAt)];
  return {
    async get(organizationId: string, id: string): Promise<ServerRow | undefined> {
      const [row] = await db.select(columns).from(servers).where(and(eq(servers.id, id), ...visible(organizationId)));
      return row;
    },
    async list(organizationId: string, limit: number, after?: CursorPosition) {
      const rows = await db
        .select(columns)
        .from(servers)
        .where(and(...visible(organizationId), olderThan(servers.createdAt, servers.id, after)))
        .orderBy(...newestFirst(servers.createdAt, servers.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(servers).where(and(...visible(organizationId)));
      return { rows, total: total?.n ?? 0 };
    },
  };
}
export type ServersRepo = ReturnType<typeof createServersRepo>;
