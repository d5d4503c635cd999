// SQL for invitations. An invitation is open while it is neither accepted nor revoked; an
// open one past its expiry can only be resent or revoked. Tokens are kept as SHA-256 only.
import { and, asc, eq, gt, isNull, sql } from "drizzle-orm";
import { invitations, memberships, organizations, users, type Database } from "@berth/db";

export type InvitationRow = typeof invitations.$inferSelect;

const open = and(isNull(invitations.acceptedAt), isNull(invitations.revokedAt));

export function createInvitationsRepo(db: Database) {
  return {
    /** The new invitation; null when one to this address is already open in the organisation. */
    async insert(values: typeof invitations.$inferInsert): Promise<InvitationRow | null> {
      const [row] = await db.insert(invitations).values(values).onConflictDoNothing().returning();
      return row ?? null;
    },

    /** Removes an invitation whose mail could not be sent (it was never seen by anyone). */
    async delete(id: string): Promise<void> {
      await db.delete(invitations).where(eq(invitations.id, id));
    },

    /** The organisation's open invitations, oldest first. */
    listOpen(organizationId: string): Promise<InvitationRow[]> {
      return db.select().from(invitations).where(and(eq(invitations.organizationId, organizationId), open)).orderBy(asc(invitations.createdAt));
    },

    async getOpen(organizationId: string, id: string): Promise<InvitationRow | undefined> {
      const [row] = await db.select().from(invitations).where(and(eq(invitations.id, id), eq(invitations.organizationId, organizationId), open));
      return row;
    },

    /** A new token and expiry for an open invitation; undefined when it is not open. */
    async renew(organizationId: string, id: string, values: { tokenHash: string; sentAt: Date; expiresAt: Date }): Promise<InvitationRow | undefined> {
      const [row] = await db
        .update(invitations)
        .set(values)
        .where(and(eq(invitations.id, id), eq(invitations.organizationId, organizationId), open))
        .returning();
      return row;
    },

    async revoke(organizationId: string, id: string, now: Date): Promise<boolean> {
      const rows = await db
        .update(invitations)
        .set({ revokedAt: now })
        .where(and(eq(invitations.id, id), eq(invitations.organizationId, organizationId), open))
        .returning({ id: invitations.id });
      return rows.length > 0;
    },

    /** The open, unexpired invitation with this token hash, with its organisation's name. */
    async usable(tokenHash: string, now: Date): Promise<(InvitationRow & { organizationName: string }) | undefined> {
      const [row] = await db
        .select({ invitation: invitations, organizationName: organizations.name })
        .from(invitations)
        .innerJoin(organizations, eq(organizations.id, invitations.organizationId))
        .where(and(eq(invitations.tokenHash, tokenHash), open, gt(invitations.expiresAt, now)));
      return row ? { ...row.invitation, organizationName: row.organizationName } : undefined;
    },

    /**
     * Marks the invitation accepted by the user and makes them a member with its role, in one
     * statement: if it was taken meanwhile (accepted, revoked, expired), nothing happens and
     * undefined comes back. Someone already a member keeps the role they had.
     */
    async accept(id: string, userId: string, now: Date): Promise<{ organizationId: string; role: string } | undefined> {
      const { rows } = await db.$client.query<{ organization_id: string; role: string }>(
        `with taken as (
           update invitations set accepted_at = $3, accepted_by = $2
           where id = $1 and accepted_at is null and revoked_at is null and expires_at > $3
           returning organization_id, role),
         joined as (
           insert into memberships (organization_id, user_id, role, created_at)
           select organization_id, $2, role, $3 from taken
           on conflict (organization_id, user_id) do nothing
           returning role)
         select t.organization_id,
                coalesce((select role from joined),
                         (select m.role from memberships m where m.organization_id = t.organization_id and m.user_id = $2)) as role
         from taken t`,
        [id, userId, now],
      );
      const r = rows[0];
      return r ? { organizationId: r.organization_id, role: r.role } : undefined;
    },

    async organizationName(organizationId: string): Promise<string | undefined> {
      const [row] = await db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, organizationId));
      return row?.name;
    },

    /** Whether the address belongs to a member of the organisation. */
    async isMember(organizationId: string, email: string): Promise<boolean> {
      const [row] = await db
        .select({ id: users.id })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(eq(memberships.organizationId, organizationId), sql`lower(${users.email}) = lower(${email})`));
      return row !== undefined;
    },
  };
}
export type InvitationsRepo = ReturnType<typeof createInvitationsRepo>;
