// Who belongs where: the caller's organisations, members and their roles, project roles, and
// taking access away (removing a member, signing a member out everywhere).
//
// The owner rules (checkMembershipChange): organisation admins manage admins and members;
// only owners (and portal admins) make owners or change or remove an owner; the last owner of
// an organisation can be neither demoted nor removed, by anyone. A member may always leave.
// Membership changes of one organisation run one at a time (organizations.repo.ts `locked`),
// so two owners demoting each other at once cannot leave it without one.
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { AccountsRepo } from "../auth/accounts.repo.ts";
import { can, deniedMessage, type Role } from "../auth/permissions.ts";
import type { SessionPrincipal, Sessions } from "../auth/sessions.ts";
import type { ApiKeysService } from "../api-keys/api-keys.service.ts";
import type { LockedMemberships, OrganizationsRepo } from "./organizations.repo.ts";

export type OrgRole = "owner" | "admin" | "member";
export type ProjectRole = "admin" | "member";

/** Who asks: their user id and their role in the organisation concerned. */
export interface Caller {
  userId: string;
  role: Role;
}

export interface MembershipChange {
  caller: Caller;
  /** The person whose membership changes. */
  userId: string;
  /** Their stored role now; undefined when they are not a member. */
  current: string | undefined;
  /** Their role after the change; null: removed. */
  next: OrgRole | null;
  /** How many owners the organisation has now. */
  owners: number;
}

/** Throws unless the caller may make this change (the rules at the top of this file). */
export function checkMembershipChange(c: MembershipChange): void {
  const leaving = c.next === null && c.userId === c.caller.userId;
  if (!leaving && !can(c.caller.role, "org.members.manage")) throw new DomainError("permission_denied", deniedMessage("org.members.manage"));
  if (c.current === undefined && c.next === null) throw notFound("Member");
  if (!can(c.caller.role, "org.owners.manage")) {
    if (c.current === "owner") throw new DomainError("owner_required", "Only organisation owners can change or remove an owner.");
    if (c.next === "owner") throw new DomainError("owner_required", "Only organisation owners can make owners.");
  }
  if (c.current === "owner" && c.next !== "owner" && c.owners <= 1) {
    throw new DomainError("last_owner", "This is the organisation's last owner: make someone else an owner first.");
  }
}

export function createMemberships(deps: {
  repo: OrganizationsRepo;
  accounts: Pick<AccountsRepo, "userByEmail" | "userById">;
  users: Pick<Sessions, "revokeAll">;
  keys: Pick<ApiKeysService, "revokeCreatedBy">;
  clock: Clock;
}) {
  const { repo, clock } = deps;

  async function addToOrganization(organizationId: string, userId: string, role: OrgRole) {
    return repo.upsertMembership(organizationId, userId, role, clock.now());
  }

  /** Checks the change under the organisation's lock, then `apply`s it there; 404 for no such organisation. */
  async function change<T>(organizationId: string, c: Omit<MembershipChange, "current" | "owners">, apply: (m: LockedMemberships) => Promise<T>): Promise<T> {
    const out = await repo.locked(organizationId, async (m) => {
      const current = await m.role(c.userId);
      checkMembershipChange({ ...c, current, owners: current === "owner" ? await m.owners() : 0 });
      return { value: await apply(m) };
    });
    if (out === null) throw notFound("Organization");
    return out.value;
  }

  return {
    addToOrganization,
    addToProject: (projectId: string, userId: string, role: ProjectRole) => repo.upsertProjectMembership(projectId, userId, role, clock.now()),

    /** The caller's organisations; a portal admin sees every one. */
    organizationsOf: (p: SessionPrincipal) => (p.isPortalAdmin ? repo.all(p.userId) : repo.ofMember(p.userId)),

    members: (organizationId: string) => repo.members(organizationId),

    /**
     * Changes a member's role, under the owner rules. Only members: a person joins by
     * accepting an invitation (modules/invitations), never by being named here, so an account
     * someone registered under another person's address cannot be attached.
     */
    async putMember(caller: Caller, organizationId: string, input: { email: string; role: OrgRole }) {
      const user = await deps.accounts.userByEmail(input.email);
      const notMember = () =>
        new DomainError("user_not_found", `${input.email} is not a member of this organisation: invite them (POST /organizations/${organizationId}/invitations)`);
      if (!user) throw notMember();
      const { id: userId, email, name } = user;
      const m = await change(organizationId, { caller, userId, next: input.role }, async (locked) => {
        if ((await locked.role(userId)) === undefined) throw notMember();
        return locked.put(userId, input.role, clock.now());
      });
      return { user_id: userId, email, name, role: m.role, created_at: m.createdAt.toISOString() };
    },

    /**
     * Removes a member (or the caller leaves): their project roles there go too, the API keys
     * they created in the organisation are revoked, and their open event streams of it end on
     * every replica. Keys are revoked first, once the change is known to be allowed: should the
     * removal then fail, nothing is left open and the request can be repeated.
     */
    async removeMember(caller: Caller, organizationId: string, userId: string): Promise<void> {
      const c = { caller, userId, next: null };
      await change(organizationId, c, async () => {});
      await deps.keys.revokeCreatedBy(organizationId, userId);
      await change(organizationId, c, (locked) => locked.remove(userId));
    },

    /**
     * Signs a member out everywhere (sessions belong to the person, not to one organisation)
     * and revokes the API keys they created in this organisation. They can sign in again; to
     * shut them out of the organisation, remove them. An owner's access is for owners to cut,
     * a portal admin's for portal admins.
     */
    async revokeMemberAccess(caller: Caller, organizationId: string, userId: string) {
      const membership = await repo.membership(organizationId, userId);
      if (!membership) throw notFound("Member");
      if (membership.role === "owner" && !can(caller.role, "org.owners.manage")) {
        throw new DomainError("owner_required", "Only organisation owners can revoke an owner's sessions.");
      }
      const user = await deps.accounts.userById(userId);
      if (user?.isPortalAdmin && caller.role !== "portal_admin") {
        throw new DomainError("permission_denied", "Only portal administrators can revoke a portal administrator's sessions.");
      }
      const sessions = await deps.users.revokeAll(userId);
      const keys = await deps.keys.revokeCreatedBy(organizationId, userId);
      return { user_id: userId, sessions_revoked: sessions, api_keys_revoked: keys };
    },

    /** Gives a member of the project's organisation a role in the project. */
    async putProjectMember(organizationId: string, projectId: string, userId: string, role: ProjectRole) {
      if (!(await repo.membership(organizationId, userId))) throw notFound("Member");
      await repo.upsertProjectMembership(projectId, userId, role, clock.now());
      return { project_id: projectId, user_id: userId, role };
    },

    /** Takes a person's role in a project away (their organisation role stays); 404 when they hold none. */
    async removeProjectMember(organizationId: string, projectId: string, userId: string): Promise<void> {
      if (!(await repo.deleteProjectMembership(organizationId, projectId, userId))) throw notFound("Project member");
    },
  };
}
export type Memberships = ReturnType<typeof createMemberships>;
