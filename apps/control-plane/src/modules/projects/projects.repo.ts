// SQL for projects. Soft-deleted projects are invisible to every query here.
import { and, asc, count, eq, gt, isNull, sql, type SQL } from "drizzle-orm";
import { environments, projects, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst } from "../../db/keyset.ts";
import { preparedRead } from "../../db/prepared-read.ts";
import { ACTIVE_STATUSES } from "../deployments/operations/deployment-state.ts";
import type { Scope } from "../../lib/scope.ts";

/**
 * The secret of the git hook and the sealed credentials of the repository URL are never read
 * with the project; the hook and the dispatcher read them on their own.
 */
export type ProjectRow = Omit<typeof projects.$inferSelect, "gitHookSecretEnc" | "gitRepoCredentialsEnc"> & { environmentCount: number };

/**
 * A repository URL still holding its userinfo in clear (written before migration 0011): only
 * https ones carry credentials (git-credentials.ts splits those); an ssh URL's user (git@)
 * is not a secret and stays.
 */
const CLEAR_USERINFO = "^https?://[^/?#]*@";

const columns = {
  id: projects.id,
  organizationId: projects.organizationId,
  serverId: projects.serverId,
  name: projects.name,
  erpVersion: projects.erpVersion,
  gitRepoUrl: projects.gitRepoUrl,
  defaultBranch: projects.defaultBranch,
  developmentServerId: projects.developmentServerId,
  developmentLimit: projects.developmentLimit,
  createdAt: projects.createdAt,
  updatedAt: projects.updatedAt,
  deletedAt: projects.deletedAt,
  environmentCount: sql<number>`(select count(*)::int from environments e where e.project_id = "projects"."id" and e.is_active)`,
};

// The list and get of projects are the hottest reads of the public API: their SQL is
// built once as named statements (one per shape), sent without drizzle (db/prepared-read.ts).
const ph = (name: string) => sql.placeholder(name);
const countColumns = { n: count() };

export function createProjectsRepo(db: Database) {
  const visible = (scope: Scope): SQL[] => {
    const conds = [eq(projects.organizationId, scope.organizationId), isNull(projects.deletedAt)];
    if (scope.projectId) conds.push(eq(projects.id, scope.projectId));
    return conds;
  };
  const visibleBy = (scoped: boolean): SQL[] => [
    eq(projects.organizationId, ph("org")),
    isNull(projects.deletedAt),
    ...(scoped ? [eq(projects.id, ph("project"))] : []),
  ];
  const pool = db.$client;
  const prepared = (scoped: boolean) => ({
    get: preparedRead(pool, `projects_get_${scoped}`, db.select(columns).from(projects).where(and(eq(projects.id, ph("id")), ...visibleBy(scoped))), columns),
    first: preparedRead(
      pool,
      `projects_first_${scoped}`,
      db
        .select(columns)
        .from(projects)
        .where(and(...visibleBy(scoped)))
        .orderBy(...newestFirst(projects.createdAt, projects.id))
        .limit(ph("limit")),
      columns,
    ),
    after: preparedRead(
      pool,
      `projects_after_${scoped}`,
      db
        .select(columns)
        .from(projects)
        .where(and(...visibleBy(scoped), sql`(${projects.createdAt}, ${projects.id}) < (${ph("afterTs")}::timestamptz, ${ph("afterId")}::uuid)`))
        .orderBy(...newestFirst(projects.createdAt, projects.id))
        .limit(ph("limit")),
      columns,
    ),
    count: preparedRead(pool, `projects_count_${scoped}`, db.select(countColumns).from(projects).where(and(...visibleBy(scoped))), countColumns),
  });
  const statements = { org: prepared(false), project: prepared(true) };
  const pick = (scope: Scope) => (scope.projectId ? statements.project : statements.org);
  const args = (scope: Scope) => ({ org: scope.organizationId, ...(scope.projectId ? { project: scope.projectId } : {}) });

  const get = async (scope: Scope, id: string): Promise<ProjectRow | undefined> => {
    const [row] = await pick(scope).get({ ...args(scope), id });
    return row;
  };
  return {
    get,
    async list(scope: Scope, limit: number, after?: CursorPosition) {
      const s = pick(scope);
      const [rows, total] = await Promise.all([
        after
          ? s.after({ ...args(scope), limit: limit + 1, afterTs: after.createdAt.toISOString(), afterId: after.id })
          : s.first({ ...args(scope), limit: limit + 1 }),
        s.count(args(scope)),
      ]);
      return { rows, total: total[0]?.n ?? 0 };
    },
    async insert(values: typeof projects.$inferInsert): Promise<ProjectRow> {
      const [row] = await db.insert(projects).values(values).returning({ id: projects.id });
      return (await get({ organizationId: values.organizationId, projectId: null }, row!.id))!;
    },
    async update(scope: Scope, id: string, values: Partial<typeof projects.$inferInsert>): Promise<ProjectRow | undefined> {
      const [row] = await db.update(projects).set(values).where(and(eq(projects.id, id), ...visible(scope))).returning({ id: projects.id });
      return row ? get(scope, row.id) : undefined;
    },
    /** Projects (deleted ones too) whose git_repo_url still carries its userinfo in clear. */
    /** Up to `limit` projects after id `after` (in id order) whose URL still holds its userinfo in clear. */
    async withClearCredentials(after: string, limit: number): Promise<{ id: string; gitRepoUrl: string }[]> {
      const rows = await db
        .select({ id: projects.id, gitRepoUrl: projects.gitRepoUrl })
        .from(projects)
        .where(and(gt(projects.id, after), sql`${projects.gitRepoUrl} ~* ${CLEAR_USERINFO}`))
        .orderBy(asc(projects.id))
        .limit(limit);
      return rows.map((r) => ({ id: r.id, gitRepoUrl: r.gitRepoUrl! }));
    },
    /** Replaces a clear URL by its bare form and sealed userinfo, unless the URL changed meanwhile. */
    async moveCredentials(id: string, clearUrl: string, url: string, sealed: string | undefined): Promise<boolean> {
      const rows = await db
        .update(projects)
        .set({ gitRepoUrl: url, ...(sealed === undefined ? {} : { gitRepoCredentialsEnc: sealed }) })
        .where(and(eq(projects.id, id), eq(projects.gitRepoUrl, clearUrl)))
        .returning({ id: projects.id });
      return rows.length > 0;
    },
    /**
     * Soft-deletes the project unless an environment is running, deploying or holding an
     * active operation. The environment rows are locked, so an action cannot slip in
     * between the check and the delete (actions lock the same rows).
     */
    async deleteIfIdle(scope: Scope, id: string, at: Date): Promise<"deleted" | "not_found" | "busy"> {
      return db.transaction(async (tx) => {
        const found = await tx.select({ id: projects.id }).from(projects).where(and(eq(projects.id, id), ...visible(scope))).for("update");
        if (found.length === 0) return "not_found";
        await tx.select({ id: environments.id }).from(environments).where(eq(environments.projectId, id)).for("update");
        const { rows } = await tx.execute<{ n: number }>(sql`
          select count(*)::int as n from environments e
          where e.project_id = ${id} and e.is_active
            and (e.status in ('running', 'deploying')
                 or exists (select 1 from deployments d where d.environment_id = e.id
                            and d.status in ${[...ACTIVE_STATUSES]}))`);
        if ((rows[0]?.n ?? 0) > 0) return "busy";
        await tx.update(projects).set({ deletedAt: at }).where(eq(projects.id, id));
        // Its environments are gone with it: their domains and aliases are free for others.
        await tx.execute(sql`delete from environment_domains where environment_id in (select id from environments where project_id = ${id})`);
        return "deleted";
      });
    },
  };
}
export type ProjectsRepo = ReturnType<typeof createProjectsRepo>;
