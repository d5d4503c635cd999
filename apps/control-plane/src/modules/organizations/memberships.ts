// Who belongs where: organisation memberships (owner | admin | member) and project roles
// (admin | member). Adding someone twice changes their role.
import { memberships, projectMemberships, type Database } from "@berth/db";
import type { Clock } from "../../lib/clock.ts";

export function createMemberships(deps: { db: Database; clock: Clock }) {
  return {
    async addToOrganization(organizationId: string, userId: string, role: "owner" | "admin" | "member") {
      const [row] = await deps.db
        .insert(memberships)
        .values({ organizationId, userId, role, createdAt: deps.clock.now() })
        .onConflictDoUpdate({ target: [memberships.organizationId, memberships.userId], set: { role } })
        .returning();
      return row!;
    },
    async addToProject(projectId: string, userId: string, role: "admin" | "member") {
      const [row] = await deps.db
        .insert(projectMemberships)
        .values({ projectId, userId, role, createdAt: deps.clock.now() })
        .onConflictDoUpdate({ target: [projectMemberships.projectId, projectMemberships.userId], set: { role } })
        .returning();
      return row!;
    },
  };
}
export type Memberships = ReturnType<typeof createMemberships>;
