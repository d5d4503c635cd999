// Starts the background work of one replica on pg-boss (see db/jobs.ts for the policy):
// the stuck-deployment sweep and the domain verification every 5 minutes, the backup scheduler every minute, the retention of
// the time-partitioned tables every hour (and once at start), and outgoing webhook deliveries with their
// fan-out, and operations that wait on a backup or copy (operation-chains.ts). Stopped when the app closes. First, secrets stored in clear before migration 0011
// (repository URL credentials, webhook signing secrets) and 0024 (migrations' repository URL
// credentials) are sealed with the master key. The jobs
// themselves (pg-boss) are started before the services, which queue work from the start.
import type pg from "pg";
import type { Clock } from "../../lib/clock.ts";
import type { Jobs } from "../../db/jobs.ts";
import type { Services } from "../../services.ts";
import { STUCK_SWEEP_CRON, STUCK_SWEEP_QUEUE, sweepStuckDeployments } from "../deployments/operations/stuck-sweep.ts";
import { BACKUP_SCHEDULER_CRON, BACKUP_SCHEDULER_QUEUE } from "../backups/backup-scheduler.ts";
import { startMigrationJobs } from "../migrations/migration-jobs.ts";
import { DOMAIN_VERIFICATION_CRON, DOMAIN_VERIFICATION_QUEUE } from "../environments/domain-verification.ts";
import { createUrlImport } from "../migrations/intake/url-import.ts";
import type { RequestGuard } from "../../lib/outbound/request-guard.ts";
import { RETENTION_CRON, RETENTION_QUEUE, runRetention, type RetentionRun, type RetentionSettings } from "../retention/retention.ts";
import { retentionSettings } from "../../config.ts";

export interface BackgroundWork {
  jobs: Jobs;
  /** Stops the loops, then the jobs, letting running ones go on for `jobsGraceMs` (jobs.ts). */
  stop(jobsGraceMs?: number): Promise<void>;
}

export async function startBackgroundWork(deps: {
  pool: pg.Pool;
  clock: Clock;
  services: Pick<Services, "webhookDeliveries" | "domainVerification" | "projects" | "webhooks" | "backupScheduler" | "migrations" | "chains">;
  /** The replica's jobs (pg-boss), started before the services; stopped by stop(). */
  jobs: Jobs;
  /** The SSRF guard import URLs go through, and the imports' deadline (default 600 s) and extra CAs. */
  outbound?: RequestGuard;
  migrationImport?: { timeoutMs?: number; ca?: string | Buffer };
  /** How long the time-partitioned tables are kept (default: BERTH_LOG_RETENTION_DAYS and BERTH_AGENT_EVENT_RETENTION_DAYS). */
  retention?: RetentionSettings;
  onError: (err: unknown) => void;
  /** A retention run that took the lock and finished (figures and a log line for the operator). */
  onRetention?: (run: RetentionRun) => void;
}): Promise<BackgroundWork> {
  // Before any delivery is signed; a failure is reported and the readers still accept the old form.
  await deps.services.projects.sealStoredCredentials().catch(deps.onError);
  await deps.services.webhooks.sealStoredSecrets().catch(deps.onError);
  // Migrations' repository URLs written in clear before migration 0024, as projects' above.
  await deps.services.migrations.record.sealStoredCredentials().catch(deps.onError);
  const { jobs } = deps;
  await jobs.define(STUCK_SWEEP_QUEUE, async () => {
    await sweepStuckDeployments({ pool: deps.pool, clock: deps.clock });
  });
  await jobs.schedule(STUCK_SWEEP_QUEUE, STUCK_SWEEP_CRON);
  // Pending domain claims whose DNS was set since: proven, they hold the name (domain-verification.ts).
  await jobs.define(DOMAIN_VERIFICATION_QUEUE, async () => {
    await deps.services.domainVerification.pass();
  });
  await jobs.schedule(DOMAIN_VERIFICATION_QUEUE, DOMAIN_VERIFICATION_CRON);
  // Scheduled backups, missed slots and retention: one pass a minute across all replicas.
  await jobs.define(BACKUP_SCHEDULER_QUEUE, async () => {
    const pass = await deps.services.backupScheduler.tick();
    for (const err of pass.errors) deps.onError(err);
  });
  await jobs.schedule(BACKUP_SCHEDULER_QUEUE, BACKUP_SCHEDULER_CRON);
  // Month partitions ahead and expired ones dropped; once now too, so a replica started after a
  // long stop makes the current month before its first hourly run. One run at a time across
  // replicas (an advisory lock): a run that finds another one going does nothing.
  const retention = deps.retention ?? retentionSettings();
  await jobs.define(RETENTION_QUEUE, async () => {
    const run = await runRetention(deps.pool, retention, deps.clock.now());
    if (run.ran) deps.onRetention?.(run);
  });
  await jobs.schedule(RETENTION_QUEUE, RETENTION_CRON);
  await jobs.send(RETENTION_QUEUE, {});
  await deps.services.webhookDeliveries.start(jobs, { pool: deps.pool, onError: deps.onError });
  // What waits on a finished backup or copy goes on at once (operation-chains.ts); the minute's maintenance catches up on a lost wake-up.
  const chains = await deps.services.chains.listen(deps.pool, deps.onError);
  // Migrations: analysis, import-url downloads, and the cleanup of abandoned bytes.
  const m = deps.services.migrations;
  const urlImport = deps.outbound
    ? createUrlImport({ guard: deps.outbound, repo: m.repo, receipt: m.receipt, quota: m.quota, fail: m.record.fail, dir: m.tus.dir, ...deps.migrationImport })
    : undefined;
  await startMigrationJobs({ jobs, migrations: m, ...(urlImport ? { runImport: (id) => urlImport.run(id) } : {}), onError: deps.onError });
  return {
    jobs,
    async stop(jobsGraceMs?: number) {
      await chains.close();
      await deps.services.webhookDeliveries.stop();
      await jobs.stop(jobsGraceMs);
    },
  };
}
