// Who may do what where: a person's role in an organisation or a project, which projects
// they may see, and the checks every platform route makes. No role at all there is a 404
// (the thing is not shown to them); a role without the permission is a 403 with the spec's
// message. The one place these questions are answered; the SQL is in access.repo.ts.
import { withoutCredentials } from "../../lib/git-credentials.ts";
import { DomainError } from "../../lib/errors.ts";
import type { AccessRepo } from "./access.repo.ts";
import { can, deniedMessage, higher, orgRole, projectRole, type Permission, type Role } from "./permissions.ts";
import { notePortalAct } from "./portal-acts.ts";
import type { SessionPrincipal } from "./sessions.ts";

export interface ProjectAccess {
  organizationId: string;
  projectId: string;
  role: Role | null;
}

export interface VisibleProject {
  id: string;
  organizationId: string;
  name: string;
  erpVersion: string | null;
  defaultBranch: string | null;
  /** Without credentials (they are kept sealed elsewhere). */
  gitRepoUrl: string | null;
  /** Where a push to a branch without an environment creates a development environment (null: nowhere), and how many may run. */
  developmentServerId: string | null;
  developmentLimit: number;
  /** The person's role there (an organisation member without a project role counts as project_member). */
  role: Role;
}

/** A person's role in an organisation, from their stored membership role (undefined: none). */
export function effectiveOrgRole(p: Pick<SessionPrincipal, "isPortalAdmin">, stored: string | undefined): Role | null {
  if (p.isPortalAdmin) return "portal_admin";
  return stored === undefined ? null : (orgRole(stored) ?? "project_member");
}

/** A person's role in a project: the higher of their organisation and project roles. */
export function effectiveProjectRole(p: Pick<SessionPrincipal, "isPortalAdmin">, storedOrg: string | null, storedProject: string | null): Role | null {
  return p.isPortalAdmin ? "portal_admin" : higher(orgRole(storedOrg), projectRole(storedProject));
}

export function createAccess(repo: AccessRepo) {
  async function roleInOrg(p: SessionPrincipal, organizationId: string): Promise<Role | null> {
    if (p.isPortalAdmin) return "portal_admin";
    return effectiveOrgRole(p, await repo.orgRole(p.userId, organizationId));
  }

  async function roleInProject(p: SessionPrincipal, projectId: string): Promise<ProjectAccess | null> {
    const row = await repo.projectRoles(p.userId, projectId);
    if (!row) return null;
    return { organizationId: row.organization_id, projectId, role: effectiveProjectRole(p, row.org_role, row.project_role) };
  }

  /**
   * The projects the caller may see, with their role in each: of one organisation (given
   * the caller's role there) or of every organisation they belong to.
   */
  async function projects(p: SessionPrincipal, scope: { organizationId: string; role: Role } | null): Promise<VisibleProject[]> {
    const rows = await repo.projects(p.userId, { organizationId: scope?.organizationId ?? null, all: scope !== null && can(scope.role, "org.projects.manage") });
    return rows.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      name: r.name,
      erpVersion: r.erp_version,
      defaultBranch: r.default_branch,
      gitRepoUrl: r.git_repo_url === null ? null : withoutCredentials(r.git_repo_url),
      developmentServerId: r.development_server_id,
      developmentLimit: r.development_limit,
      role: effectiveProjectRole(p, r.org_role, r.project_role) ?? "project_member",
    }));
  }

  return {
    /** The caller's role in an organisation: any membership counts as at least project_member there. */
    roleInOrg,
    /** The caller's role in a project: organisation owner/admin, else their project role. */
    roleInProject,

    /** Throws 404 (`what` not found) without a role in the project, 403 without the permission. */
    async requireProject(p: SessionPrincipal, projectId: string, permission: Permission, what = "Project"): Promise<ProjectAccess> {
      const access = await roleInProject(p, projectId);
      if (!access || access.role === null) throw new DomainError("not_found", `${what} not found`);
      if (p.isPortalAdmin) notePortalAct(access.organizationId);
      if (!can(access.role, permission)) throw new DomainError("permission_denied", deniedMessage(permission));
      return access;
    },

    async requireOrg(p: SessionPrincipal, organizationId: string, permission: Permission): Promise<Role> {
      const role = await roleInOrg(p, organizationId);
      if (role === null) throw new DomainError("not_found", "Organization not found");
      if (p.isPortalAdmin) notePortalAct(organizationId);
      if (!can(role, permission)) throw new DomainError("permission_denied", deniedMessage(permission));
      return role;
    },

    /** Portal-wide permissions (the support console): held by portal admins only. */
    requirePortal(p: SessionPrincipal, permission: Permission): void {
      if (!can(p.isPortalAdmin ? "portal_admin" : null, permission)) throw new DomainError("permission_denied", deniedMessage(permission));
    },

    /** The organisations the caller belongs to, with their role in each. */
    async organizations(p: SessionPrincipal) {
      const rows = await repo.organizations(p.userId);
      return rows.map((o) => ({ id: o.id, name: o.name, plan: o.plan, role: effectiveOrgRole(p, o.role) ?? "project_member" }));
    },

    projects,

    /**
     * For open streams: whether each (session, organisation) may still be read, i.e. the
     * session is live and its person still belongs to the organisation or is a portal admin.
     */
    async stillAllowed(streams: { sessionId: string; organizationId: string }[], now: Date): Promise<boolean[]> {
      const ok = await repo.stillAllowed(streams, now);
      return streams.map((x) => ok.has(`${x.sessionId}:${x.organizationId}`));
    },

    /** The projects of an organisation the caller may see; null when that is all of them. */
    async visibleProjectIds(p: SessionPrincipal, organizationId: string, role: Role): Promise<Set<string> | null> {
      if (can(role, "org.projects.manage")) return null;
      return new Set((await projects(p, { organizationId, role })).map((pr) => pr.id));
    },
  };
}
export type Access = ReturnType<typeof createAccess>;
