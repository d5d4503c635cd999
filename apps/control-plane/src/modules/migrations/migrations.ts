// The migrations module made whole, each part given what it uses when it is made: the record
// first, then the backup's arrival (the integrity check, the resumable uploads over it, the
// removal of bytes, the intake), what the analysis found, and the run. Background work is
// queued over the replica's jobs (migration-queue.ts) and run by migration-jobs.ts.
import type { Database } from "@berth/db";
import type { Jobs } from "../../db/jobs.ts";
import type { Clock } from "../../lib/clock.ts";
import type { ObjectStore } from "../../lib/object-store/index.ts";
import type { AddonRepositoriesRepo } from "../addon-repositories/addon-repositories.repo.ts";
import type { Access } from "../auth/access.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { EnvironmentsService } from "../environments/environments.service.ts";
import type { ErpImages } from "../erp-images/erp-images.ts";
import type { ProjectsRepo } from "../projects/projects.repo.ts";
import type { ProjectsService } from "../projects/projects.service.ts";
import type { ServersRepo } from "../servers/servers.repo.ts";
import { createExecutionRepo } from "./execution/execution.repo.ts";
import { createExecutionService } from "./execution/execution.service.ts";
import { analyzeMigrationBackup, type AnalyzeBackup } from "./findings/migration-analysis.ts";
import { createFindingsService } from "./findings/findings.service.ts";
import { createMigrationRequirements } from "./findings/migration-requirements.ts";
import { createBackupBytes } from "./intake/backup-bytes.ts";
import { createBackupReceipt } from "./intake/backup-receipt.ts";
import { createIntakeRepo } from "./intake/intake.repo.ts";
import { createIntakeService } from "./intake/intake.service.ts";
import { PLATFORM_PREFIX_PATH } from "./intake/migration-paths.ts";
import { createTusUploads } from "./intake/tus-uploads.ts";
import { createUploadQuota } from "./intake/upload-quota.ts";
import { createMigrationQueue } from "./migration-queue.ts";
import { createMigrationAccess } from "./record/migration-access.ts";
import type { TierLimits } from "./record/migration-states.ts";
import { createMigrationsRepo } from "./record/migrations.repo.ts";
import { createRecordService } from "./record/record.service.ts";

export function createMigrations(deps: {
  db: Database;
  clock: Clock;
  masterKey: Buffer;
  /** Where backups are kept (the backup store). */
  store: ObjectStore;
  /** The replica's jobs, where the analysis and imports are queued; absent (scripts): queueing answers 503 jobs_unavailable. */
  jobs?: Pick<Jobs, "send"> | undefined;
  access: Pick<Access, "requireOrg">;
  servers: Pick<ServersRepo, "exists" | "withFigures" | "placedEnvironments">;
  images: Pick<ErpImages, "imageFor">;
  addonRepositories: Pick<AddonRepositoriesRepo, "list">;
  projects: Pick<ProjectsService, "create">;
  projectsRepo: Pick<ProjectsRepo, "get">;
  environments: Pick<EnvironmentsService, "create">;
  environmentsRepo: Pick<EnvironmentsRepo, "get">;
  operations: Pick<DeploymentsService, "operate">;
  /** Reads a stored migration backup (default: analysis/, through findings/migration-analysis.ts). */
  analyze?: AnalyzeBackup | undefined;
  /** Where resumable uploads are assembled before they move into the backup store. */
  uploadDir: string;
  /** Where upload tiers begin (default: platform spec 4.3); tests lower them. */
  tierLimits?: TierLimits | undefined;
  /** Bytes an organisation's migration backups may take (default: intake/upload-limits.ts). */
  quotaBytes?: number | undefined;
  /** Where the organisation's environments among `ids` are served (https://…), in one lookup. */
  environmentUrls?: (organizationId: string, environmentIds: string[]) => Promise<Map<string, string | null>>;
  /** Cancels the deployment a running migration is (the agent is told). */
  cancelDeployment?: (deploymentId: string, by: string) => Promise<void>;
}) {
  const { db, clock, store } = deps;
  const repo = createMigrationsRepo(db);
  const intakeRepo = createIntakeRepo(db);
  const queue = createMigrationQueue(deps.jobs);
  const requirements = createMigrationRequirements({ images: deps.images, addonRepositories: deps.addonRepositories });
  const receipt = createBackupReceipt({ repo, store, queue });
  const quota = createUploadQuota({ repo: intakeRepo, quotaBytes: deps.quotaBytes });
  const tus = createTusUploads({
    dir: deps.uploadDir,
    prefix: `${PLATFORM_PREFIX_PATH}/migrations`,
    receipt,
    uploadingIds: (organizationId) => intakeRepo.uploadingIds(organizationId),
    byId: (id) => repo.byId(id),
  });
  const discardUpload = (uploadId: string) => tus.discard(uploadId);
  const bytes = createBackupBytes({ repo: intakeRepo, store, clock, discardUpload, sweepUploads: (idleBefore) => tus.sweep(idleBefore) });
  const record = createRecordService({
    repo,
    servers: deps.servers,
    clock,
    queue,
    removeBytes: bytes.remove,
    discardUpload,
    ...(deps.environmentUrls ? { environmentUrls: deps.environmentUrls } : {}),
    ...(deps.cancelDeployment ? { cancelDeployment: deps.cancelDeployment } : {}),
    masterKey: deps.masterKey,
  });
  return {
    repo,
    access: createMigrationAccess({ repo, access: deps.access }),
    record,
    receipt,
    quota,
    tus,
    bytes,
    intake: createIntakeService({ repo, store, clock, queue, receipt, quota, removeBytes: bytes.remove, tierLimits: deps.tierLimits }),
    findings: createFindingsService({ repo, servers: deps.servers, store, analyze: deps.analyze ?? analyzeMigrationBackup, requirements, fail: record.fail }),
    execution: createExecutionService({
      repo,
      runs: createExecutionRepo(db),
      projects: deps.projects,
      projectsRepo: deps.projectsRepo,
      environments: deps.environments,
      environmentsRepo: deps.environmentsRepo,
      operations: deps.operations,
      requirements,
      clock,
    }),
  };
}
export type Migrations = ReturnType<typeof createMigrations>;
