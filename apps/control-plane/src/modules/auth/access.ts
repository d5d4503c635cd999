// Who may do what where: a person's role in an organisation or a project, and the checks
// every platform route makes. No role at all there is a 404 (the thing is not shown to
// them); a role without the permission is a 403 with the spec's message.
import { sql } from "drizzle-orm";
import type { Database } from "@berth/db";
import { DomainError } from "../../lib/errors.ts";
import { can, deniedMessage, higher, orgRole, projectRole, type Permission, type Role } from "./permissions.ts";
import type { SessionPrincipal } from "./sessions.ts";

export interface ProjectAccess {
  organizationId: string;
  projectId: string;
  role: Role | null;
}

export function createAccess(db: Database) {
  return {
    /** The caller's role in an organisation: any membership counts as at least project_member there. */
    async roleInOrg(p: SessionPrincipal, organizationId: string): Promise<Role | null> {
      if (p.isPortalAdmin) return "portal_admin";
      const { rows } = await db.execute<{ role: string }>(
        sql`select role from memberships where organization_id = ${organizationId} and user_id = ${p.userId}`,
      );
      const stored = rows[0]?.role;
      return stored === undefined ? null : (orgRole(stored) ?? "project_member");
    },

    /** The caller's role in a project: organisation owner/admin, else their project role. */
    async roleInProject(p: SessionPrincipal, projectId: string): Promise<ProjectAccess | null> {
      const { rows } = await db.execute<{ organization_id: string; org_role: string | null; project_role: string | null }>(sql`
        select pr.organization_id, m.role as org_role, pm.role as project_role
        from projects pr
        left join memberships m on m.organization_id = pr.organization_id and m.user_id = ${p.userId}
        left join project_memberships pm on pm.project_id = pr.id and pm.user_id = ${p.userId}
        where pr.id = ${projectId} and pr.deleted_at is null`);
      const row = rows[0];
      if (!row) return null;
      const role = p.isPortalAdmin ? "portal_admin" : higher(orgRole(row.org_role), projectRole(row.project_role));
      return { organizationId: row.organization_id, projectId, role };
    },

    /** Throws 404 (`what` not found) without a role in the project, 403 without the permission. */
    async requireProject(p: SessionPrincipal, projectId: string, permission: Permission, what = "Project"): Promise<ProjectAccess> {
      const access = await this.roleInProject(p, projectId);
      if (!access || access.role === null) throw new DomainError("not_found", `${what} not found`);
      if (!can(access.role, permission)) throw new DomainError("permission_denied", deniedMessage(permission));
      return access;
    },

    async requireOrg(p: SessionPrincipal, organizationId: string, permission: Permission): Promise<Role> {
      const role = await this.roleInOrg(p, organizationId);
      if (role === null) throw new DomainError("not_found", "Organization not found");
      if (!can(role, permission)) throw new DomainError("permission_denied", deniedMessage(permission));
      return role;
    },
  };
}
export type Access = ReturnType<typeof createAccess>;
