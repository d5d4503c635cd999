// SQL for environments. An environment is visible when its project is visible.
import { and, count, eq, isNull, type SQL } from "drizzle-orm";
import { environments, projects, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";

export type EnvironmentRow = typeof environments.$inferSelect;

export function visibleEnvironment(scope: Scope): SQL[] {
  const conds = [eq(environments.organizationId, scope.organizationId), isNull(projects.deletedAt)];
  if (scope.projectId) conds.push(eq(environments.projectId, scope.projectId));
  return conds;
}

export function createEnvironmentsRepo(db: Database) {
  return {
    async get(scope: Scope, id: string): Promise<EnvironmentRow | undefined> {
      const [row] = await db
        .select({ env: environments })
        .from(environments)
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(and(eq(environments.id, id), ...visibleEnvironment(scope)));
      return row?.env;
    },
    async listForProject(projectId: string, limit: number, after?: CursorPosition) {
      const where = and(eq(environments.projectId, projectId), eq(environments.isActive, true));
      const rows = await db
        .select()
        .from(environments)
        .where(and(where, olderThan(environments.createdAt, environments.id, after)))
        .orderBy(...newestFirst(environments.createdAt, environments.id))
        .limit(limit + 1);
      const [total] = await db.select({ n: count() }).from(environments).where(where);
      return { rows, total: total?.n ?? 0 };
    },
    async insert(values: typeof environments.$inferInsert): Promise<EnvironmentRow> {
      const [row] = await db.insert(environments).values(values).returning();
      return row!;
    },
  };
}
export type EnvironmentsRepo = ReturnType<typeof createEnvironmentsRepo>;
