// The migrations' background work on pg-boss (db/jobs.ts policy: 3 retries, backoff from 5 s,
// 600 s timeout, 10 jobs at once system-wide): the analysis of a stored backup, the download
// of an import URL (both queued through migration-queue.ts), every 15 minutes the cleanup of
// cancelled and failed migrations' bytes, and every minute the reconcile of running
// migrations whose deployment ended unseen.
import type { Jobs } from "../../db/jobs.ts";
import type { BackupBytes } from "./intake/backup-bytes.ts";
import type { ExecutionService } from "./execution/execution.service.ts";
import type { FindingsService } from "./findings/findings.service.ts";
import type { RecordService } from "./record/record.service.ts";
import { ANALYZE_QUEUE, IMPORT_QUEUE } from "./migration-queue.ts";

export const CLEANUP_QUEUE = "migrations.cleanup";
export const CLEANUP_CRON = "*/15 * * * *";
export const RECONCILE_QUEUE = "migrations.reconcile";
export const RECONCILE_CRON = "* * * * *";

export async function startMigrationJobs(deps: {
  jobs: Jobs;
  migrations: { record: Pick<RecordService, "fail">; findings: Pick<FindingsService, "runAnalysis">; bytes: Pick<BackupBytes, "cleanup">; execution: Pick<ExecutionService, "reconcile"> };
  /** Downloads an import URL into the store (url-import.ts); absent: imports fail with a message. */
  runImport?: (migrationId: string) => Promise<void>;
  onError: (err: unknown) => void;
}): Promise<void> {
  const { jobs, migrations } = deps;
  await jobs.define<{ migration_id: string }>(ANALYZE_QUEUE, async ({ migration_id }) => {
    await migrations.findings.runAnalysis(migration_id, AbortSignal.timeout(590_000));
  });
  await jobs.define<{ migration_id: string }>(IMPORT_QUEUE, async ({ migration_id }) => {
    // One try: the import resumes by itself within its deadline, and a failure is the migration's (retry re-queues it).
    try {
      if (!deps.runImport) throw new Error("Imports are not available on this replica");
      await deps.runImport(migration_id);
    } catch (error) {
      deps.onError(error);
      await migrations.record.fail(migration_id, `Download failed: ${(error as Error).message}`).catch(deps.onError);
    }
  });
  await jobs.define(CLEANUP_QUEUE, async () => {
    await migrations.bytes.cleanup();
  });
  await jobs.schedule(CLEANUP_QUEUE, CLEANUP_CRON);
  await jobs.define(RECONCILE_QUEUE, async () => {
    await migrations.execution.reconcile();
  });
  await jobs.schedule(RECONCILE_QUEUE, RECONCILE_CRON);
}
