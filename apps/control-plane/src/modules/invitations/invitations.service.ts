// Invitations: the only way a person joins an organisation. An admin invites an e-mail
// address with a role; the address receives a link with a single-use token, valid a week;
// whoever holds the token proves they read that mailbox, and the invitation is accepted by
// the account with that address (signed in), or by a new account made for it (register with
// the token). So an account someone registered under another person's address can never be
// attached to an organisation: it cannot accept without the token, and the token is not its.
//
// The owner rules of memberships.service.ts hold: only owners (and portal admins) invite
// owners. Resending makes a new token (the old link stops working) and a new expiry.
import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Mailer } from "../../lib/mail/mailer.ts";
import { can, type Role } from "../auth/permissions.ts";
import type { Sessions } from "../auth/sessions.ts";
import type { OrgRole } from "../organizations/memberships.service.ts";
import { invitationMail } from "./invitation-mail.ts";
import type { InvitationRow, InvitationsRepo } from "./invitations.repo.ts";

export const INVITATION_PREFIX = "bin_";
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

const hashToken = (token: string) => createHash("sha256").update(token).digest("hex");
const sameAddress = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();
const unusable = () =>
  new DomainError("invitation_not_found", "This invitation is unknown, expired, revoked or already used: ask for a new one");

export function invitationView(i: InvitationRow, now: Date) {
  return {
    id: i.id,
    organization_id: i.organizationId,
    email: i.email,
    role: i.role as OrgRole,
    status: i.expiresAt.getTime() <= now.getTime() ? ("expired" as const) : ("pending" as const),
    invited_by: i.invitedBy,
    created_at: i.createdAt.toISOString(),
    sent_at: i.sentAt.toISOString(),
    expires_at: i.expiresAt.toISOString(),
  };
}

export interface Inviter {
  userId: string;
  role: Role;
  name: string;
}

export function createInvitations(deps: {
  repo: InvitationsRepo;
  accounts: { userByEmail(email: string): Promise<{ id: string } | undefined> };
  mailer: Pick<Mailer, "send">;
  sessions: Pick<Sessions, "registerAccount">;
  clock: Clock;
}) {
  const { repo, clock } = deps;
  const newToken = () => INVITATION_PREFIX + randomBytes(32).toString("base64url");

  /** Mails the invitation's link with this token. */
  async function send(i: InvitationRow, token: string, inviter: string, linkBase: string) {
    const organizationName = await repo.organizationName(i.organizationId);
    if (organizationName === undefined) throw notFound("Organization");
    await deps.mailer.send({ to: i.email, ...invitationMail({ organizationName, inviter, role: i.role, link: `${linkBase}/#/invite/${token}`, expiresAt: i.expiresAt }) });
  }

  /** Only owners (and portal admins) invite owners, as only they make owners. */
  function checkRole(inviter: Inviter, role: string) {
    if (role === "owner" && !can(inviter.role, "org.owners.manage")) throw new DomainError("owner_required", "Only organisation owners can invite owners.");
  }

  /** The usable invitation of a token, or invitation_not_found. */
  async function usable(token: string) {
    if (!token.startsWith(INVITATION_PREFIX)) throw unusable();
    const found = await repo.usable(hashToken(token), clock.now());
    if (!found) throw unusable();
    return found;
  }

  return {
    /**
     * Invites the address with a role and mails it the link (`linkBase` is the dashboard's
     * origin). If the mail cannot be sent, nothing is kept (mail_unavailable).
     */
    async invite(inviter: Inviter, organizationId: string, input: { email: string; role: OrgRole }, linkBase: string) {
      checkRole(inviter, input.role);
      const email = input.email.trim();
      if (await repo.isMember(organizationId, email)) throw new DomainError("already_member", `${email} is already a member of this organisation: change their role instead`);
      const token = newToken();
      const now = clock.now();
      const row = await repo.insert({
        organizationId,
        email,
        role: input.role,
        tokenHash: hashToken(token),
        invitedBy: inviter.userId,
        createdAt: now,
        sentAt: now,
        expiresAt: new Date(now.getTime() + INVITATION_TTL_MS),
      });
      if (!row) throw new DomainError("invitation_exists", `An invitation to ${email} is already open: resend or revoke it`);
      try {
        await send(row, token, inviter.name, linkBase);
      } catch (err) {
        await repo.delete(row.id);
        throw err;
      }
      return invitationView(row, now);
    },

    list: async (organizationId: string) => (await repo.listOpen(organizationId)).map((i) => invitationView(i, clock.now())),

    /** A new link (the old one stops working) and a new week, mailed again. */
    async resend(inviter: Inviter, organizationId: string, id: string, linkBase: string) {
      const current = await repo.getOpen(organizationId, id);
      if (!current) throw notFound("Invitation");
      checkRole(inviter, current.role);
      const token = newToken();
      const now = clock.now();
      const row = await repo.renew(organizationId, id, { tokenHash: hashToken(token), sentAt: now, expiresAt: new Date(now.getTime() + INVITATION_TTL_MS) });
      if (!row) throw notFound("Invitation");
      await send(row, token, inviter.name, linkBase);
      return invitationView(row, now);
    },

    async revoke(organizationId: string, id: string): Promise<void> {
      if (!(await repo.revoke(organizationId, id, clock.now()))) throw notFound("Invitation");
    },

    /** What the accept page shows before anyone signs in. */
    async lookup(token: string) {
      const i = await usable(token);
      return {
        organization: { id: i.organizationId, name: i.organizationName },
        email: i.email,
        role: i.role as OrgRole,
        expires_at: i.expiresAt.toISOString(),
        account_exists: (await deps.accounts.userByEmail(i.email)) !== undefined,
      };
    },

    /**
     * Accepts the invitation for the signed-in person, whose address must be the one it was
     * sent to. The token is spent; the person is a member with its role (or keeps the role
     * they already had).
     */
    async accept(person: { userId: string; email: string }, token: string) {
      const i = await usable(token);
      if (!sameAddress(i.email, person.email)) {
        throw new DomainError("invitation_email_mismatch", `This invitation was sent to another e-mail address; sign in as that person to accept it`);
      }
      const joined = await repo.accept(i.id, person.userId, clock.now());
      if (!joined) throw unusable();
      return { organization_id: joined.organizationId, organization_name: i.organizationName, role: joined.role as OrgRole };
    },

    /**
     * Registration with an invitation: an account for the address the invitation was sent to
     * (the token proves the mailbox), signed in, and a member of the inviting organisation.
     */
    async register(token: string, input: { email: string; name: string; password: string }, meta: { userAgent?: string; ip?: string }) {
      const i = await usable(token);
      if (!sameAddress(i.email, input.email)) {
        throw new DomainError("invitation_email_mismatch", "This invitation was sent to another e-mail address: register with the address it was sent to");
      }
      const account = await deps.sessions.registerAccount(input, meta);
      // Spent by someone else between the check and here: the account stays, without this organisation.
      const joined = await repo.accept(i.id, account.user.id, clock.now());
      if (!joined) throw unusable();
      return { ...account, organization: { id: i.organizationId, name: i.organizationName } };
    },
  };
}
export type Invitations = ReturnType<typeof createInvitations>;
