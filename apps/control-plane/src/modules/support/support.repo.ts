// SQL of the support console: search across every organisation, a server with its agent
// session, figures, environments and recent commands, and the commands support issued.
// Unlike the customers' repos nothing here is confined to one organisation: support sees all.
import { and, desc, eq, ilike, isNull, or, sql } from "drizzle-orm";
import { agentCommands, environments, organizations, projects, serverStats, servers, type Database } from "@berth/db";

export type CommandRow = typeof agentCommands.$inferSelect;

export function createSupportRepo(db: Database) {
  return {
    /** Organisations whose name or id is ILIKE `needle`, by name. */
    async organizationsLike(needle: string, limit: number) {
      return db
        .select({ id: organizations.id, name: organizations.name, plan: organizations.plan })
        .from(organizations)
        .where(or(ilike(organizations.name, needle), sql`${organizations.id}::text ilike ${needle}`))
        .orderBy(organizations.name)
        .limit(limit);
    },

    /** Live servers whose name, hostname or id is ILIKE `needle`, by name. */
    async serversLike(needle: string, limit: number) {
      return db
        .select({
          id: servers.id,
          name: servers.name,
          hostname: servers.hostname,
          status: servers.status,
          organization_id: organizations.id,
          organization_name: organizations.name,
        })
        .from(servers)
        .innerJoin(organizations, eq(organizations.id, servers.organizationId))
        .where(and(isNull(servers.deletedAt), or(ilike(servers.name, needle), ilike(servers.hostname, needle), sql`${servers.id}::text ilike ${needle}`)))
        .orderBy(servers.name)
        .limit(limit);
    },

    /** Active environments whose name or id is ILIKE `needle`, by name. */
    async environmentsLike(needle: string, limit: number) {
      return db
        .select({
          id: environments.id,
          name: environments.name,
          status: environments.status,
          organization_id: environments.organizationId,
          organization_name: organizations.name,
          project_id: projects.id,
          project_name: projects.name,
          server_id: environments.serverId,
        })
        .from(environments)
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .innerJoin(organizations, eq(organizations.id, environments.organizationId))
        .where(and(eq(environments.isActive, true), or(ilike(environments.name, needle), sql`${environments.id}::text ilike ${needle}`)))
        .orderBy(environments.name)
        .limit(limit);
    },

    /** A server (deleted ones included) with its organisation. */
    async serverWithOrganization(serverId: string) {
      const [row] = await db
        .select({ server: servers, organization: { id: organizations.id, name: organizations.name, plan: organizations.plan } })
        .from(servers)
        .innerJoin(organizations, eq(organizations.id, servers.organizationId))
        .where(eq(servers.id, serverId));
      return row;
    },

    /**
     * The server's agent session, if any, and whether `lastSeenAt` is within `staleAfterSeconds`
     * of the database's now.
     */
    async agentSession(serverId: string, lastSeenAt: Date | null, staleAfterSeconds: number) {
      const { rows } = await db.execute<{ connected_at: Date | string | null; fresh: boolean }>(sql`
        select a.connected_at, (${lastSeenAt?.toISOString() ?? null}::timestamptz > now() - make_interval(secs => ${staleAfterSeconds})) as fresh
        from (select 1) one left join agent_sessions a on a.server_id = ${serverId}`);
      return rows[0];
    },

    async stats(serverId: string) {
      const [stats] = await db.select().from(serverStats).where(eq(serverStats.serverId, serverId));
      return stats;
    },

    /** Every environment placed on the server, active ones first, by name. */
    async environmentsOn(serverId: string) {
      return db
        .select({ id: environments.id, name: environments.name, status: environments.status, project_id: projects.id, project_name: projects.name, is_active: environments.isActive })
        .from(environments)
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(eq(environments.serverId, serverId))
        .orderBy(desc(environments.isActive), environments.name);
    },

    /** The server's newest commands. */
    async recentCommands(serverId: string, limit: number): Promise<CommandRow[]> {
      return db.select().from(agentCommands).where(eq(agentCommands.serverId, serverId)).orderBy(desc(agentCommands.seq)).limit(limit);
    },

    /** Whether the environment belongs to the organisation and is placed on the server. */
    async environmentOnServer(environmentId: string, organizationId: string, serverId: string): Promise<boolean> {
      const [env] = await db
        .select({ id: environments.id })
        .from(environments)
        .where(and(eq(environments.id, environmentId), eq(environments.organizationId, organizationId), eq(environments.serverId, serverId)));
      return env !== undefined;
    },

    /** A command with the organisation of its server. */
    async command(commandId: string) {
      const [row] = await db
        .select({ command: agentCommands, organizationId: servers.organizationId })
        .from(agentCommands)
        .innerJoin(servers, eq(servers.id, agentCommands.serverId))
        .where(eq(agentCommands.commandId, commandId));
      return row;
    },

    /** The command that carries an operation, if one was issued. */
    async commandOfOperation(deploymentId: string): Promise<string | null> {
      const [row] = await db.select({ id: agentCommands.commandId }).from(agentCommands).where(eq(agentCommands.deploymentId, deploymentId));
      return row?.id ?? null;
    },
  };
}
export type SupportRepo = ReturnType<typeof createSupportRepo>;
