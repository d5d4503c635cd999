// Who belongs where: the caller's organisations, members and their roles, project roles.
// Adding someone twice changes their role; only owners make owners; a project role is only
// for a member of the project's organisation.
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { AccountsRepo } from "../auth/accounts.repo.ts";
import { can, type Role } from "../auth/permissions.ts";
import type { SessionPrincipal, Sessions } from "../auth/sessions.ts";
import type { OrganizationsRepo } from "./organizations.repo.ts";

export type OrgRole = "owner" | "admin" | "member";
export type ProjectRole = "admin" | "member";

export function createMemberships(deps: { repo: OrganizationsRepo; accounts: Pick<AccountsRepo, "userByEmail">; users: Pick<Sessions, "createUser">; clock: Clock }) {
  const { repo, clock } = deps;

  async function addToOrganization(organizationId: string, userId: string, role: OrgRole) {
    return repo.upsertMembership(organizationId, userId, role, clock.now());
  }

  return {
    addToOrganization,
    addToProject: (projectId: string, userId: string, role: ProjectRole) => repo.upsertProjectMembership(projectId, userId, role, clock.now()),

    /** The caller's organisations; a portal admin sees every one. */
    organizationsOf: (p: SessionPrincipal) => (p.isPortalAdmin ? repo.all(p.userId) : repo.ofMember(p.userId)),

    members: (organizationId: string) => repo.members(organizationId),

    /**
     * Adds the person with this e-mail address (creating their account when a name and
     * password are given and none exists) or changes their role; `callerRole` is the role
     * of whoever asks: only owners make owners.
     */
    async putMember(callerRole: Role, organizationId: string, input: { email: string; role: OrgRole; name?: string | undefined; password?: string | undefined }) {
      if (input.role === "owner" && !can(callerRole, "org.audit.read")) throw new DomainError("permission_denied", "Only organisation owners can make owners.");
      let user = await deps.accounts.userByEmail(input.email);
      if (!user) {
        if (!input.name || !input.password) throw new DomainError("user_not_found", "No account has this e-mail address; give name and password to create one");
        user = await deps.users.createUser({ email: input.email, name: input.name, password: input.password });
      }
      const m = await addToOrganization(organizationId, user.id, input.role);
      return { user_id: user.id, email: user.email, name: user.name, role: m.role, created_at: m.createdAt.toISOString() };
    },

    /** Gives a member of the project's organisation a role in the project. */
    async putProjectMember(organizationId: string, projectId: string, userId: string, role: ProjectRole) {
      if (!(await repo.membership(organizationId, userId))) throw notFound("Member");
      await repo.upsertProjectMembership(projectId, userId, role, clock.now());
      return { project_id: projectId, user_id: userId, role };
    },
  };
}
export type Memberships = ReturnType<typeof createMemberships>;
