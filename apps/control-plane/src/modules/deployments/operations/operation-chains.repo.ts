// SQL of operation chains (operation-chains.ts): copies whose deploy has not started yet.
import { and, eq, gt, sql } from "drizzle-orm";
import { deployments, type Database } from "@berth/db";
import type { DeploymentRow } from "./operations.repo.ts";

/** The idempotency scope of a deploy that follows a copy; its key is the copy's id. */
export const THEN_DEPLOY_SCOPE = "then_deploy";

export function createOperationChainsRepo(db: Database) {
  return {
    /** Copies that succeeded since `since`, name a deploy to run after them, and have none yet; oldest first. */
    async copiesAwaitingDeploy(since: Date, limit: number): Promise<DeploymentRow[]> {
      return db
        .select()
        .from(deployments)
        .where(
          and(
            eq(deployments.kind, "copy"),
            eq(deployments.status, "success"),
            gt(deployments.completedAt, since),
            sql`${deployments.extraData} ? 'then_deploy'`,
            sql`not exists (select 1 from deployments f where f.environment_id = ${deployments.environmentId}
                  and f.idempotency_scope = ${THEN_DEPLOY_SCOPE} and f.idempotency_key = ${deployments.id}::text)`,
          ),
        )
        .orderBy(deployments.completedAt)
        .limit(limit);
    },
  };
}
export type OperationChainsRepo = ReturnType<typeof createOperationChainsRepo>;
