// What the database knows about who may see what: organisation memberships and project
// roles, read for the access module (access.ts), which decides.
import { sql, type SQL } from "drizzle-orm";
import type { Database } from "@berth/db";
import { storedOrgRolesWith } from "./permissions.ts";

/** Organisation roles that see every project of their organisation (owners, admins). */
const SEES_ALL_PROJECTS = storedOrgRolesWith("org.projects.manage");

export type ProjectRoleRow = {
  id: string;
  organization_id: string;
  name: string;
  erp_version: string | null;
  default_branch: string | null;
  git_repo_url: string | null;
  development_server_id: string | null;
  development_limit: number;
  org_role: string | null;
  project_role: string | null;
};

/**
 * The ids of the projects a person may see: every project of an organisation where their
 * role sees all projects, and the projects they hold a role in. For queries that filter by it.
 */
export function visibleProjectIds(userId: string): SQL {
  return sql`(
    select pr.id from projects pr
    left join memberships m on m.organization_id = pr.organization_id and m.user_id = ${userId}
    left join project_memberships pm on pm.project_id = pr.id and pm.user_id = ${userId}
    where pr.deleted_at is null and (m.role in ${SEES_ALL_PROJECTS} or pm.user_id is not null))`;
}

export function createAccessRepo(db: Database) {
  return {
    /** The stored role of a person in an organisation; undefined without a membership. */
    async orgRole(userId: string, organizationId: string): Promise<string | undefined> {
      const { rows } = await db.execute<{ role: string }>(sql`select role from memberships where organization_id = ${organizationId} and user_id = ${userId}`);
      return rows[0]?.role;
    },

    /** A live project's organisation with the person's stored roles there; undefined for no such project. */
    async projectRoles(userId: string, projectId: string) {
      const { rows } = await db.execute<{ organization_id: string; org_role: string | null; project_role: string | null }>(sql`
        select pr.organization_id, m.role as org_role, pm.role as project_role
        from projects pr
        left join memberships m on m.organization_id = pr.organization_id and m.user_id = ${userId}
        left join project_memberships pm on pm.project_id = pr.id and pm.user_id = ${userId}
        where pr.id = ${projectId} and pr.deleted_at is null`);
      return rows[0];
    },

    /**
     * Of these (session, organisation) pairs, the ones whose session is still live and whose
     * person still belongs to the organisation (or is a portal admin), as `session:organisation`.
     */
    async stillAllowed(pairs: { sessionId: string; organizationId: string }[], now: Date): Promise<Set<string>> {
      if (pairs.length === 0) return new Set();
      const { rows } = await db.execute<{ session_id: string; organization_id: string }>(sql`
        select distinct p.session_id, p.organization_id
        from unnest(${sql.param(pairs.map((x) => x.sessionId))}::uuid[], ${sql.param(pairs.map((x) => x.organizationId))}::uuid[]) as p(session_id, organization_id)
        join sessions s on s.id = p.session_id and s.revoked_at is null and s.expires_at > ${now.toISOString()}::timestamptz
        join users u on u.id = s.user_id
        where u.is_portal_admin
           or exists (select 1 from memberships m where m.organization_id = p.organization_id and m.user_id = s.user_id)`);
      return new Set(rows.map((r) => `${r.session_id}:${r.organization_id}`));
    },

    /** The organisations a person belongs to, with their stored role, by name. */
    async organizations(userId: string) {
      const { rows } = await db.execute<{ id: string; name: string; plan: string; role: string }>(sql`
        select o.id, o.name, o.plan, m.role from memberships m join organizations o on o.id = m.organization_id
        where m.user_id = ${userId} order by o.name`);
      return rows;
    },

    /**
     * Live projects with the person's stored roles, by name: of one organisation or of all;
     * `all` lists every one of them, otherwise only those the person may see.
     */
    async projects(userId: string, opts: { organizationId: string | null; all: boolean }): Promise<ProjectRoleRow[]> {
      const { rows } = await db.execute<ProjectRoleRow>(sql`
        select pr.id, pr.organization_id, pr.name, pr.erp_version, pr.default_branch, pr.git_repo_url, pr.development_server_id, pr.development_limit, m.role as org_role, pm.role as project_role
        from projects pr
        left join memberships m on m.organization_id = pr.organization_id and m.user_id = ${userId}
        left join project_memberships pm on pm.project_id = pr.id and pm.user_id = ${userId}
        where pr.deleted_at is null
          and (${opts.organizationId}::uuid is null or pr.organization_id = ${opts.organizationId})
          and (${opts.all} or pm.user_id is not null or m.role in ${SEES_ALL_PROJECTS})
        order by pr.name, pr.id`);
      return rows;
    },
  };
}
export type AccessRepo = ReturnType<typeof createAccessRepo>;
