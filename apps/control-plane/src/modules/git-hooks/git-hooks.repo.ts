// SQL of the inbound git push hook: the projects' sealed hook secrets, the projects and
// addon repositories a push may be for, the environments it deploys, and the claims of
// (host, delivery id, project) that make a redelivery get the first outcome back.
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import type { Stage } from "../environments/stages.ts";
import { deployments, environmentAddons, environments, gitHookDeliveries, projects, type Database } from "@berth/db";

export type GitHookDeliveryRow = typeof gitHookDeliveries.$inferSelect;
export type EnvironmentAddonRow = typeof environmentAddons.$inferSelect;

/** One delivery id of one host for one project. */
export interface DeliveryKey {
  host: string;
  deliveryId: string;
  projectId: string;
}

/** A project with a hook secret whose repository (its own, or an addon's) may be the pushed one. */
export interface CandidateRow {
  id: string;
  org: string;
  /** The repository URL that matched the pattern. */
  url: string | null;
  enc: string | null;
}

export function createGitHooksRepo(db: Database) {
  const claimOf = (k: DeliveryKey) =>
    and(eq(gitHookDeliveries.gitHost, k.host), eq(gitHookDeliveries.deliveryId, k.deliveryId), eq(gitHookDeliveries.projectId, k.projectId));
  return {
    /** Stores a project's sealed hook secret; false when there is no such (live) project. */
    async setSecret(projectId: string, sealed: string, at: Date): Promise<boolean> {
      const [row] = await db
        .update(projects)
        .set({ gitHookSecretEnc: sealed, updatedAt: at })
        .where(and(eq(projects.id, projectId), isNull(projects.deletedAt)))
        .returning({ id: projects.id });
      return row !== undefined;
    },

    /** Live projects with a hook secret whose own repository URL, lower-cased, is LIKE `pattern`. */
    async projectsWithRepoLike(pattern: string): Promise<CandidateRow[]> {
      return db
        .select({ id: projects.id, org: projects.organizationId, url: projects.gitRepoUrl, enc: projects.gitHookSecretEnc })
        .from(projects)
        .where(and(isNull(projects.deletedAt), sql`${projects.gitHookSecretEnc} is not null`, sql`lower(${projects.gitRepoUrl}) like ${pattern}`));
    },

    /** Live projects with a hook secret and an active addon whose repository URL, lower-cased, is LIKE `pattern`. */
    async projectsWithAddonRepoLike(pattern: string): Promise<CandidateRow[]> {
      return db
        .selectDistinct({ id: projects.id, org: projects.organizationId, url: environmentAddons.gitUrl, enc: projects.gitHookSecretEnc })
        .from(environmentAddons)
        .innerJoin(environments, eq(environments.id, environmentAddons.environmentId))
        .innerJoin(projects, eq(projects.id, environments.projectId))
        .where(
          and(
            isNull(projects.deletedAt),
            sql`${projects.gitHookSecretEnc} is not null`,
            eq(environmentAddons.isActive, true),
            sql`lower(${environmentAddons.gitUrl}) like ${pattern}`,
          ),
        );
    },

    /** Active environments of the project that deploy automatically from `branch`, oldest first, with what their stage asks of a push. */
    async autoDeployEnvironments(projectId: string, branch: string): Promise<{ id: string; stage: Stage; refreshOnPush: boolean }[]> {
      return db
        .select({ id: environments.id, stage: environments.stage, refreshOnPush: environments.refreshOnPush })
        .from(environments)
        .where(and(eq(environments.projectId, projectId), eq(environments.isActive, true), eq(environments.autoDeploy, true), eq(environments.gitBranch, branch)))
        .orderBy(environments.createdAt);
    },

    /** The project's production environment, if it has an active one. */
    async productionOf(projectId: string): Promise<{ id: string } | undefined> {
      const [row] = await db
        .select({ id: environments.id })
        .from(environments)
        .where(and(eq(environments.projectId, projectId), eq(environments.isActive, true), eq(environments.stage, "production")));
      return row;
    },

    /** Active auto-deploy addons on `branch` of the project's active environments. */
    async autoDeployAddons(projectId: string, branch: string): Promise<{ addon: EnvironmentAddonRow; environmentId: string }[]> {
      const rows = await db
        .select({ addon: environmentAddons, environmentId: environments.id })
        .from(environmentAddons)
        .innerJoin(environments, eq(environments.id, environmentAddons.environmentId))
        .where(
          and(
            eq(environments.projectId, projectId),
            eq(environments.isActive, true),
            eq(environmentAddons.isActive, true),
            eq(environmentAddons.autoDeploy, true),
            eq(environmentAddons.branch, branch),
          ),
        );
      return rows;
    },

    /** Claims the delivery for the project; undefined when it was claimed before. */
    async claim(k: DeliveryKey): Promise<GitHookDeliveryRow | undefined> {
      const [row] = await db
        .insert(gitHookDeliveries)
        .values({ gitHost: k.host, deliveryId: k.deliveryId, projectId: k.projectId, deploymentIds: [] })
        .onConflictDoNothing()
        .returning();
      return row;
    },

    async claimed(k: DeliveryKey): Promise<GitHookDeliveryRow | undefined> {
      const [row] = await db.select().from(gitHookDeliveries).where(claimOf(k));
      return row;
    },

    /** Records the deployments a claimed delivery started. */
    async recordDeployments(k: DeliveryKey, deploymentIds: string[]): Promise<void> {
      await db.update(gitHookDeliveries).set({ deploymentIds }).where(claimOf(k));
    },

    /** Gives the claim up, so a redelivery may try again. */
    async release(k: DeliveryKey): Promise<void> {
      await db.delete(gitHookDeliveries).where(claimOf(k));
    },

    /** The environment (and its name), trigger and extra data of these deployments. */
    async deploymentsByIds(ids: string[]): Promise<{ id: string; env: string; name: string; trigger: string; extra: unknown }[]> {
      return db
        .select({ id: deployments.id, env: deployments.environmentId, name: environments.name, trigger: deployments.trigger, extra: deployments.extraData })
        .from(deployments)
        .innerJoin(environments, eq(environments.id, deployments.environmentId))
        .where(inArray(deployments.id, ids));
    },
  };
}
export type GitHooksRepo = ReturnType<typeof createGitHooksRepo>;
