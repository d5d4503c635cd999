// The migrations' background work as the services queue it (pg-boss, migration-jobs.ts runs
// it): the analysis of a stored backup and the download of an import URL. Given to the
// services when they are made, over the replica's jobs; without jobs (scripts), queueing
// answers 503 jobs_unavailable.
import type { Jobs } from "../../db/jobs.ts";
import { DomainError } from "../../lib/errors.ts";

export const ANALYZE_QUEUE = "migrations.analyze";
export const IMPORT_QUEUE = "migrations.import";

/** Queues background work of one migration. */
export interface MigrationQueue {
  analyze(migrationId: string): Promise<void>;
  importUrl(migrationId: string): Promise<void>;
}

export function createMigrationQueue(jobs: Pick<Jobs, "send"> | undefined): MigrationQueue {
  const send = async (queue: string, migrationId: string) => {
    if (!jobs) throw new DomainError("jobs_unavailable", "Background jobs are not running on this replica; try again shortly");
    await jobs.send(queue, { migration_id: migrationId });
  };
  return {
    analyze: (id) => send(ANALYZE_QUEUE, id),
    importUrl: (id) => send(IMPORT_QUEUE, id),
  };
}
