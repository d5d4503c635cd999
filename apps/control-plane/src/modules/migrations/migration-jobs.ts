// The migrations' background work on pg-boss (db/jobs.ts policy: 3 retries, backoff from 5 s,
// 600 s timeout, 10 jobs at once system-wide): the analysis of a stored backup, the download
// of an import URL, every 15 minutes the cleanup of cancelled and failed migrations' bytes, and
// every minute the reconcile of running migrations whose deployment ended unseen.
import type { Jobs } from "../../db/jobs.ts";
import type { MigrationsService } from "./migrations.service.ts";

export const ANALYZE_QUEUE = "migrations.analyze";
export const IMPORT_QUEUE = "migrations.import";
export const CLEANUP_QUEUE = "migrations.cleanup";
export const CLEANUP_CRON = "*/15 * * * *";
export const RECONCILE_QUEUE = "migrations.reconcile";
export const RECONCILE_CRON = "* * * * *";

export async function startMigrationJobs(deps: {
  jobs: Jobs;
  migrations: MigrationsService;
  /** Downloads an import URL into the store (url-import.ts); absent: imports fail with a message. */
  runImport?: (migrationId: string) => Promise<void>;
  onError: (err: unknown) => void;
}): Promise<void> {
  const { jobs, migrations } = deps;
  await jobs.define<{ migration_id: string }>(ANALYZE_QUEUE, async ({ migration_id }) => {
    await migrations.runAnalysis(migration_id, AbortSignal.timeout(590_000));
  });
  await jobs.define<{ migration_id: string }>(IMPORT_QUEUE, async ({ migration_id }) => {
    // One try: the import resumes by itself within its deadline, and a failure is the migration's (retry re-queues it).
    try {
      if (!deps.runImport) throw new Error("Imports are not available on this replica");
      await deps.runImport(migration_id);
    } catch (error) {
      deps.onError(error);
      await migrations.fail(migration_id, `Download failed: ${(error as Error).message}`).catch(deps.onError);
    }
  });
  await jobs.define(CLEANUP_QUEUE, async () => {
    await migrations.cleanup();
  });
  await jobs.schedule(CLEANUP_QUEUE, CLEANUP_CRON);
  await jobs.define(RECONCILE_QUEUE, async () => {
    await migrations.reconcile();
  });
  await jobs.schedule(RECONCILE_QUEUE, RECONCILE_CRON);
  migrations.setQueue({
    analyze: async (id) => void (await jobs.send(ANALYZE_QUEUE, { migration_id: id })),
    importUrl: async (id) => void (await jobs.send(IMPORT_QUEUE, { migration_id: id })),
  });
}
