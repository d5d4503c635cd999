// SQL for add-on repositories (table environment_addons) at their three levels. A scope
// names the level and its owner: the platform (no owner), an organisation, or an
// environment of an organisation; every query is bounded by it.
import { and, asc, count, eq, inArray, isNull, or, sql, type SQL } from "drizzle-orm";
import { environmentAddons, type Database } from "@berth/db";

export type AddonRepositoryRow = typeof environmentAddons.$inferSelect;
export type AddonRepositoryLevel = "platform" | "organization" | "environment";

export type AddonScope =
  | { level: "platform" }
  | { level: "organization"; organizationId: string }
  | { level: "environment"; organizationId: string; environmentId: string };

export interface AddonRepositoryValues {
  name: string;
  gitUrl: string;
  branch: string;
  pinnedCommit: string | null;
  submodules: boolean;
  subPaths: string[];
  access: "public" | "deploy_key" | "token";
  deployKeyPublic: string | null;
  secretEnc: string | null;
  autoDeploy: boolean;
}

function where(scope: AddonScope): SQL {
  switch (scope.level) {
    case "platform":
      return and(eq(environmentAddons.level, "platform"), isNull(environmentAddons.organizationId))!;
    case "organization":
      return and(eq(environmentAddons.level, "organization"), eq(environmentAddons.organizationId, scope.organizationId))!;
    case "environment":
      return and(
        eq(environmentAddons.level, "environment"),
        eq(environmentAddons.organizationId, scope.organizationId),
        eq(environmentAddons.environmentId, scope.environmentId),
      )!;
  }
}

export function createAddonRepositoriesRepo(db: Database) {
  return {
    async list(scope: AddonScope): Promise<AddonRepositoryRow[]> {
      return db.select().from(environmentAddons).where(and(where(scope), eq(environmentAddons.isActive, true))).orderBy(asc(environmentAddons.createdAt), asc(environmentAddons.id));
    },

    async get(scope: AddonScope, id: string): Promise<AddonRepositoryRow | undefined> {
      const [row] = await db
        .select()
        .from(environmentAddons)
        .where(and(where(scope), eq(environmentAddons.id, id), eq(environmentAddons.isActive, true)));
      return row;
    },

    /** Inserts unless the scope already holds `limit` repositories (null then). */
    async create(scope: AddonScope, values: AddonRepositoryValues, limit: number): Promise<AddonRepositoryRow | null> {
      return db.transaction(async (tx) => {
        // One writer per scope at a time, so the limit holds under concurrent creates.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`addon-repositories:${scopeKey(scope)}`}))`);
        const [{ n } = { n: 0 }] = await tx
          .select({ n: count() })
          .from(environmentAddons)
          .where(and(where(scope), eq(environmentAddons.isActive, true)));
        if (n >= limit) return null;
        const [row] = await tx
          .insert(environmentAddons)
          .values({
            level: scope.level,
            organizationId: scope.level === "platform" ? null : scope.organizationId,
            environmentId: scope.level === "environment" ? scope.environmentId : null,
            ...values,
          })
          .returning();
        return row ?? null;
      });
    },

    async update(scope: AddonScope, id: string, values: Partial<AddonRepositoryValues>, now: Date): Promise<AddonRepositoryRow | undefined> {
      const [row] = await db
        .update(environmentAddons)
        .set({ ...values, updatedAt: now })
        .where(and(where(scope), eq(environmentAddons.id, id), eq(environmentAddons.isActive, true)))
        .returning();
      return row;
    },

    /** Deleted for good: its sealed key or token goes with it (deployments keep only names, URLs and commits). */
    async remove(scope: AddonScope, id: string): Promise<boolean> {
      const rows = await db
        .delete(environmentAddons)
        .where(and(where(scope), eq(environmentAddons.id, id)))
        .returning({ id: environmentAddons.id });
      return rows.length > 0;
    },

    /** What a deploy of the environment carries: its own, its organisation's and the platform's (environment first). */
    async forDeploy(organizationId: string, environmentId: string): Promise<AddonRepositoryRow[]> {
      const rows = await db
        .select()
        .from(environmentAddons)
        .where(
          and(
            eq(environmentAddons.isActive, true),
            or(where({ level: "environment", organizationId, environmentId }), where({ level: "organization", organizationId }), where({ level: "platform" })),
          ),
        )
        .orderBy(asc(environmentAddons.createdAt), asc(environmentAddons.id));
      const rank = { environment: 0, organization: 1, platform: 2 } as Record<string, number>;
      return rows.sort((a, b) => (rank[a.level] ?? 3) - (rank[b.level] ?? 3));
    },

    /** Writes extra_data.addons of a deployment unless it has one (a retry's or rollback's came with it). */
    async recordSnapshot(deploymentId: string, entries: AddonSnapshotEntry[]): Promise<void> {
      await db.execute(
        sql`update deployments set extra_data = jsonb_set(coalesce(extra_data, '{}'::jsonb), '{addons}', ${JSON.stringify(entries)}::jsonb) where id = ${deploymentId} and not (coalesce(extra_data, '{}'::jsonb) ? 'addons')`,
      );
    },

    /** The sealed secrets of these repositories (a retry's or rollback's repositories, by id). */
    async secrets(ids: string[]): Promise<Map<string, { access: string; secretEnc: string | null }>> {
      if (ids.length === 0) return new Map();
      const rows = await db
        .select({ id: environmentAddons.id, access: environmentAddons.access, secretEnc: environmentAddons.secretEnc })
        .from(environmentAddons)
        .where(inArray(environmentAddons.id, ids));
      return new Map(rows.map((r) => [r.id, { access: r.access, secretEnc: r.secretEnc }]));
    },
  };
}
export type AddonRepositoriesRepo = ReturnType<typeof createAddonRepositoriesRepo>;

function scopeKey(scope: AddonScope): string {
  return scope.level === "platform" ? "platform" : scope.level === "organization" ? `org:${scope.organizationId}` : `env:${scope.environmentId}`;
}

/** A deployment's add-on repositories as extra_data.addons records them (no secrets). */
export interface AddonSnapshotEntry {
  id: string;
  level: AddonRepositoryLevel;
  name: string;
  url: string;
  branch: string;
  /** The pinned commit when dispatched; the commit checked out once the deploy succeeded. */
  commit: string | null;
  submodules: boolean;
  paths: string[];
}

/**
 * After a successful deploy (in the event-ingest transaction): the commit each repository
 * got is written into extra_data.addons, so a retry or rollback checks out exactly those.
 */
export async function recordAddonCommits(client: { query(text: string, values: unknown[]): Promise<unknown> }, deploymentId: string, commits: { id: string; commit: string }[]): Promise<void> {
  if (commits.length === 0) return;
  await client.query(
    `update deployments d set extra_data = jsonb_set(d.extra_data, '{addons}', (
       select coalesce(jsonb_agg(case when c.commit is null then e else jsonb_set(e, '{commit}', to_jsonb(c.commit)) end order by o), '[]'::jsonb)
       from jsonb_array_elements(d.extra_data->'addons') with ordinality as a(e, o)
       left join jsonb_to_recordset($2::jsonb) as c(id text, commit text) on c.id = e->>'id'))
     where d.id = $1 and jsonb_typeof(d.extra_data->'addons') = 'array'`,
    [deploymentId, JSON.stringify(commits)],
  );
}
