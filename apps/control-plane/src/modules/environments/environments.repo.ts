// SQL for environments. An environment is visible when its project is visible.
import { and, count, eq, inArray, isNull, ne, type SQL } from "drizzle-orm";
import { auditLog, environments, projects, type Database } from "@berth/db";
import type { CursorPosition } from "../../lib/cursor.ts";
import { newestFirst, olderThan } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import { claimNames, type Tx } from "./domain-claims.repo.ts";
import type { OtherStage, Production, Stage } from "./stages.ts";

export type EnvironmentRow = typeof environments.$inferSelect;

/** An environment with where it runs and its latest operation (the dashboard's project view). */
export interface EnvironmentOverviewRow {
  id: string;
  project_id: string;
  name: string;
  status: string;
  stage: Stage;
  require_passing_tests: boolean;
  refresh_on_push: boolean;
  git_branch: string;
  domain: string | null;
  aliases: string[];
  routing: unknown;
  auto_deploy: boolean;
  server_id: string | null;
  server_name: string | null;
  cpu_cores: number;
  ram_mb: number;
  disk_gb: number;
  workers: number;
  last_id: string | null;
  last_kind: string | null;
  last_status: string | null;
  last_version: number | null;
  last_created_at: Date | null;
  last_backup: unknown;
}

/** The outcome of claiming host names: the row, or the first name another environment holds. */
export type Claimed = { row: EnvironmentRow; taken?: undefined } | { row?: undefined; taken: string };

/** A stage change's entry in the organisation's audit log (support/audit-log.repo.ts reads it). */
export interface StageAudit {
  organizationId: string;
  actorUserId: string | null;
  action: string;
  summary: string;
}

/** Thrown inside a transaction to roll it back and answer `outcome` instead. */
class Rollback<T> extends Error {
  constructor(readonly outcome: T) {
    super("rolled back");
  }
}

async function transaction<T>(db: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  try {
    return await db.transaction(fn);
  } catch (err) {
    if (err instanceof Rollback) return err.outcome as T;
    throw err;
  }
}

/**
 * Serialises the stage changes of one project (creating, promoting): each reads the current
 * production after the one before it committed. The unique index is the backstop.
 */
async function lockProject(tx: Tx, projectId: string): Promise<void> {
  await tx.select({ id: projects.id }).from(projects).where(eq(projects.id, projectId)).for("no key update");
}

/** The project's production environment, destroyed or not. */
async function productionOf(tx: Tx, projectId: string): Promise<Production | undefined> {
  const [row] = await tx
    .select({ id: environments.id, name: environments.name, isActive: environments.isActive })
    .from(environments)
    .where(and(eq(environments.projectId, projectId), eq(environments.stage, "production")));
  return row;
}

async function audit(tx: Tx, environmentId: string, entry: StageAudit): Promise<void> {
  const { summary, ...rest } = entry;
  await tx.insert(auditLog).values({ ...rest, targetType: "environment", targetId: environmentId, result: { state: "succeeded", summary } });
}

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
    /** The environments among `ids` that the scope sees, in one query. */
    async getMany(scope: Scope, ids: string[]): Promise<EnvironmentRow[]> {
      if (ids.length === 0) return [];
      const rows = await db
        .select({ env: environments })
        .from(environments)
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(and(inArray(environments.id, ids), ...visibleEnvironment(scope)));
      return rows.map((r) => r.env);
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
    /**
     * Inserts the environment with the stage `stageOf` gives from the project's production
     * (read under the project's lock), and claims its domain and aliases, all or nothing.
     */
    async insert(values: Omit<typeof environments.$inferInsert, "stage"> & { id: string }, stageOf: (production: Production | undefined) => Stage): Promise<Claimed> {
      return transaction<Claimed>(db, async (tx) => {
        await lockProject(tx, values.projectId);
        const stage = stageOf(await productionOf(tx, values.projectId));
        const [row] = await tx.insert(environments).values({ ...values, stage }).returning();
        const taken = await claimNames(tx, { id: values.id, organizationId: values.organizationId }, [...(values.domain ? [values.domain] : []), ...(values.aliases ?? [])]);
        if (taken) throw new Rollback({ taken });
        return { row: row! };
      });
    },

    /** Sets an active environment's domain and aliases and claims them, all or nothing; undefined when it is gone or inactive. */
    async setDomains(id: string, names: { domain: string | null; aliases: string[] }, at: Date): Promise<Claimed | undefined> {
      return transaction<Claimed | undefined>(db, async (tx) => {
        const [row] = await tx
          .update(environments)
          .set({ domain: names.domain, aliases: names.aliases, updatedAt: at })
          .where(and(eq(environments.id, id), eq(environments.isActive, true)))
          .returning();
        if (!row) return undefined;
        const taken = await claimNames(tx, row, [...(names.domain ? [names.domain] : []), ...names.aliases]);
        if (taken) throw new Rollback({ taken });
        return { row };
      });
    },

    /** Sets an active environment's size (and whether its tests must pass); undefined when it is not active (any more). */
    async setSize(id: string, size: Partial<Pick<typeof environments.$inferInsert, "cpuCores" | "ramMb" | "diskGb" | "workers" | "requirePassingTests" | "refreshOnPush">>, at: Date): Promise<EnvironmentRow | undefined> {
      const [row] = await db
        .update(environments)
        .set({ ...size, updatedAt: at })
        .where(and(eq(environments.id, id), eq(environments.isActive, true)))
        .returning();
      return row;
    },

    /**
     * Sets an active, non-production environment's stage (staging or development) and writes
     * the audit entry, in one transaction; undefined when it is inactive or production (now).
     */
    async setStage(id: string, stage: OtherStage, at: Date, entry: StageAudit): Promise<EnvironmentRow | undefined> {
      return db.transaction(async (tx) => {
        const [row] = await tx
          .update(environments)
          .set({ stage, updatedAt: at })
          .where(and(eq(environments.id, id), eq(environments.isActive, true), ne(environments.stage, "production")))
          .returning();
        if (row) await audit(tx, id, entry);
        return row;
      });
    },

    /**
     * Makes an active environment its project's production, in one transaction under the
     * project's lock: `decide` reads the current production and answers what it becomes
     * (null: nothing to change), the old production takes that stage, this one becomes
     * production, and the audit entry `entry(previous)` is written. Undefined when the
     * environment is not active; unchanged when it already is production.
     */
    async promote(
      projectId: string,
      id: string,
      at: Date,
      decide: (production: Production | undefined) => OtherStage | null,
      entry: (previous: Production | undefined) => StageAudit,
    ): Promise<{ row: EnvironmentRow; previous: (Production & { stage: OtherStage }) | null } | undefined> {
      return db.transaction(async (tx) => {
        await lockProject(tx, projectId);
        const [target] = await tx.select().from(environments).where(and(eq(environments.id, id), eq(environments.projectId, projectId), eq(environments.isActive, true)));
        if (!target) return undefined;
        const production = await productionOf(tx, projectId);
        const previousStage = decide(production);
        if (target.stage === "production") return { row: target, previous: null };
        // The old production steps down first: the unique index holds at every statement.
        if (production && previousStage) {
          await tx.update(environments).set({ stage: previousStage, updatedAt: at }).where(eq(environments.id, production.id));
        }
        const [row] = await tx.update(environments).set({ stage: "production", updatedAt: at }).where(eq(environments.id, id)).returning();
        await audit(tx, id, entry(production));
        return { row: row!, previous: production && previousStage ? { ...production, stage: previousStage } : null };
      });
    },

    /** The active environments of these projects, by name, with their server and latest operation. */
    async overview(projectIds: string[]): Promise<EnvironmentOverviewRow[]> {
      if (projectIds.length === 0) return [];
      const { rows } = await db.$client.query<EnvironmentOverviewRow>(
        `select e.id, e.project_id, e.name, e.status, e.stage, e.require_passing_tests, e.refresh_on_push, e.git_branch, e.domain, e.aliases, e.routing, e.auto_deploy, s.id as server_id, s.name as server_name,
           e.cpu_cores, e.ram_mb, e.disk_gb, e.workers, d.id as last_id, d.kind as last_kind, d.status as last_status, d.version as last_version,
           d.created_at as last_created_at, e.last_backup
         from environments e
         join projects p on p.id = e.project_id
         left join servers s on s.id = coalesce(e.server_id, p.server_id)
         left join lateral (select id, kind, status, version, created_at from deployments
                            where environment_id = e.id order by created_at desc, id desc limit 1) d on true
         where e.project_id = any($1::uuid[]) and e.is_active
         order by e.name, e.id`,
        [projectIds],
      );
      return rows;
    },

    /**
     * Sets one variable (its value already sealed), unless that would make more than `max`:
     * existed tells whether it replaced one; undefined when the limit refused it.
     */
    async setVariable(id: string, name: string, entry: { value_enc: string; updated_at: string }, max: number): Promise<{ existed: boolean } | undefined> {
      const { rows } = await db.$client.query<{ existed: boolean }>(
        `with before as (select jsonb_exists(variables, $2) as existed from environments where id = $1 for update)
         update environments e set variables = e.variables || jsonb_build_object($2::text, $3::jsonb)
         from before
         where e.id = $1 and (before.existed or (select count(*) from jsonb_object_keys(e.variables)) < $4)
         returning before.existed`,
        [id, name, JSON.stringify(entry), max],
      );
      return rows[0];
    },
    /** Replaces every variable of the environment (values already sealed). */
    async replaceVariables(id: string, variables: Record<string, { value_enc: string; updated_at: string }>): Promise<void> {
      await db.update(environments).set({ variables }).where(eq(environments.id, id));
    },
    /** Deletes one variable; false when the environment has none of that name. */
    async deleteVariable(id: string, name: string): Promise<boolean> {
      const { rowCount } = await db.$client.query("update environments set variables = variables - $2::text where id = $1 and jsonb_exists(variables, $2)", [id, name]);
      return (rowCount ?? 0) > 0;
    },

    /** The project of an environment (any state), for the permission check. */
    async projectOf(environmentId: string): Promise<string | undefined> {
      const { rows } = await db.$client.query<{ project_id: string }>("select project_id from environments where id = $1", [environmentId]);
      return rows[0]?.project_id;
    },
  };
}
export type EnvironmentsRepo = ReturnType<typeof createEnvironmentsRepo>;
