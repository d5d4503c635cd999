// Organisations and who belongs where: memberships (owner | admin | member) and project
// roles (admin | member), as stored.
import { and, eq, sql } from "drizzle-orm";
import { memberships, projectMemberships, users, type Database } from "@berth/db";

export type OrganizationRow = { id: string; name: string; plan: string; role: string };

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
