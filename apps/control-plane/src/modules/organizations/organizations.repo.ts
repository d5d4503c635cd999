// Organisations and who belongs where: memberships (owner | admin | member) and project
// roles (admin | member), as stored. Changes that take access away (a membership removed,
// a role changed, a project role removed) are announced on ACCESS_CHANNEL in their own
// transaction, so every replica ends the streams they concern at commit.
import { and, count, eq, inArray, sql } from "drizzle-orm";
import { memberships, organizations, projectMemberships, projects, users, type Database } from "@berth/db";
import { ACCESS_CHANNEL, accessChangePayload } from "../auth/access-changes.ts";

export type OrganizationRow = { id: string; name: string; plan: string; role: string };
export type MembershipRow = typeof memberships.$inferSelect;

type Tx = Parameters<Parameters<Database["transaction"]>[0]>[0];

/** One organisation's memberships, read and written inside a transaction that holds its lock. */
export interface LockedMemberships {
  /** The person's stored role there; undefined without a membership. */
  role(userId: string): Promise<string | undefined>;
  /** How many owners the organisation has. */
  owners(): Promise<number>;
  /** Adds the person or changes their role; a changed role is announced. */
  put(userId: string, role: string, now: Date): Promise<MembershipRow>;
  /** Removes the person and their roles in the organisation's projects, announced. */
  remove(userId: string): Promise<void>;
}

const announceMembership = (tx: Tx, organizationId: string, userId: string) =>
  tx.execute(sql`select pg_notify(${ACCESS_CHANNEL}, ${accessChangePayload({ kind: "membership", organizationId, userId })})`);

function lockedMemberships(tx: Tx, organizationId: string): LockedMemberships {
  const role = async (userId: string) => {
    const [row] = await tx
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)));
    return row?.role;
  };
  return {
    role,
    async owners() {
      const [row] = await tx
        .select({ n: count() })
        .from(memberships)
        .where(and(eq(memberships.organizationId, organizationId), eq(memberships.role, "owner")));
      return row?.n ?? 0;
    },
    async put(userId, newRole, now) {
      const before = await role(userId);
      const [row] = await tx
        .insert(memberships)
        .values({ organizationId, userId, role: newRole, createdAt: now })
        .onConflictDoUpdate({ target: [memberships.organizationId, memberships.userId], set: { role: newRole } })
        .returning();
      if (before !== undefined && before !== newRole) await announceMembership(tx, organizationId, userId);
      return row!;
    },
    async remove(userId) {
      const ofOrganization = tx.select({ id: projects.id }).from(projects).where(eq(projects.organizationId, organizationId));
      await tx.delete(projectMemberships).where(and(eq(projectMemberships.userId, userId), inArray(projectMemberships.projectId, ofOrganization)));
      await tx.delete(memberships).where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)));
      await announceMembership(tx, organizationId, userId);
    },
  };
}

export function createOrganizationsRepo(db: Database) {
  return {
    /** The organisations the user belongs to, with their stored role, by name. */
    async ofMember(userId: string): Promise<OrganizationRow[]> {
      const { rows } = await db.execute<OrganizationRow>(sql`
        select o.id, o.name, o.plan, m.role from memberships m join organizations o on o.id = m.organization_id
        where m.user_id = ${userId} order by o.name`);
      return rows;
    },

    /** Every organisation, with the user's stored role where they have one (else 'portal_admin'), by name. */
    async all(userId: string): Promise<OrganizationRow[]> {
      const { rows } = await db.execute<OrganizationRow>(sql`
        select o.id, o.name, o.plan, coalesce(m.role, 'portal_admin') as role from organizations o
        left join memberships m on m.organization_id = o.id and m.user_id = ${userId} order by o.name`);
      return rows;
    },

    async members(organizationId: string) {
      return db
        .select({ user_id: users.id, email: users.email, name: users.name, role: memberships.role, created_at: memberships.createdAt })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.organizationId, organizationId))
        .orderBy(users.email);
    },

    async membership(organizationId: string, userId: string) {
      const [row] = await db.select().from(memberships).where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)));
      return row;
    },

    /** Adds the user to the organisation, or changes their role there. */
    async upsertMembership(organizationId: string, userId: string, role: string, now: Date) {
      const [row] = await db
        .insert(memberships)
        .values({ organizationId, userId, role, createdAt: now })
        .onConflictDoUpdate({ target: [memberships.organizationId, memberships.userId], set: { role } })
        .returning();
      return row!;
    },

    /**
     * Runs `fn` in one transaction holding the organisation's row lock, so that membership
     * changes of one organisation happen one at a time and what `fn` reads (the owners left)
     * still holds when it commits. null (and `fn` not run) when there is no such organisation.
     */
    async locked<T>(organizationId: string, fn: (m: LockedMemberships) => Promise<T>): Promise<T | null> {
      return db.transaction(async (tx) => {
        const [org] = await tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).for("no key update");
        if (!org) return null;
        return fn(lockedMemberships(tx, organizationId));
      });
    },

    /** Removes the user's role in the project, announced as a change of their access to its organisation; false when they had none. */
    async deleteProjectMembership(organizationId: string, projectId: string, userId: string): Promise<boolean> {
      return db.transaction(async (tx) => {
        const gone = await tx
          .delete(projectMemberships)
          .where(and(eq(projectMemberships.projectId, projectId), eq(projectMemberships.userId, userId)))
          .returning({ userId: projectMemberships.userId });
        if (gone.length === 0) return false;
        await announceMembership(tx, organizationId, userId);
        return true;
      });
    },

    /** Gives the user a role in the project, or changes it. */
    async upsertProjectMembership(projectId: string, userId: string, role: string, now: Date) {
      const [row] = await db
        .insert(projectMemberships)
        .values({ projectId, userId, role, createdAt: now })
        .onConflictDoUpdate({ target: [projectMemberships.projectId, projectMemberships.userId], set: { role } })
        .returning();
      return row!;
    },
  };
}
export type OrganizationsRepo = ReturnType<typeof createOrganizationsRepo>;
