// A migration's record and its state machine (platform spec 4.3): create, list, read,
// configure, cancel, retry, delete, and fail with a message. The backup's arrival is
// intake/'s, what its analysis found findings/', running the 12 steps execution/'s; what
// those do to the record outside its state (the backup's bytes, the deployment) is given here
// at construction.
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Clock } from "../../../lib/clock.ts";
import { sealClearCredentials } from "../../../lib/git-credentials.ts";
import { checkGitBranch } from "../../../lib/git-source.ts";
import { repoColumns } from "../../projects/projects.service.ts";
import type { ServersRepo } from "../../servers/servers.repo.ts";
import type { MigrationQueue } from "../migration-queue.ts";
import type { MigrationRow, MigrationsRepo } from "./migrations.repo.ts";
import { migrationView } from "./migration-view.ts";
import { CONFIGURABLE, NOT_CANCELLABLE, retryTarget, RUNNING, STEPS, type MigrationStatus } from "./migration-states.ts";

export interface Caller {
  userId: string;
}

export function createRecordService(deps: {
  repo: MigrationsRepo;
  servers: Pick<ServersRepo, "exists">;
  clock: Clock;
  /** Where a retried migration's stored backup is analysed again. */
  queue: Pick<MigrationQueue, "analyze">;
  /** Removes the backup's bytes, stored or half-uploaded (intake/backup-bytes.ts). */
  removeBytes: (m: MigrationRow) => Promise<void>;
  /** Removes what a resumable upload left (intake/tus-uploads.ts); nothing there is no error. */
  discardUpload?: (uploadId: string) => Promise<void>;
  /** Where the organisation's environments among `ids` are served (https://…), in one lookup; absent: environment_url stays null. */
  environmentUrls?: (organizationId: string, environmentIds: string[]) => Promise<Map<string, string | null>>;
  /** Cancels the deployment a running migration is (the agent is told); absent: nothing to tell. */
  cancelDeployment?: (deploymentId: string, by: string) => Promise<void>;
  /** Seals the credentials of a repository URL (as projects do). */
  masterKey: Buffer;
}) {
  const { repo } = deps;

  /**
   * The repository columns a create or configure sets (undefined: unchanged; null: none), under
   * the projects' rule: https or ssh only, a valid branch, credentials sealed apart (400 git_url_invalid, git_branch_invalid).
   */
  function gitColumns(url: string | null | undefined, branch: string | null | undefined) {
    if (branch !== undefined && branch !== null) checkGitBranch(branch, { field: "git_branch" });
    return {
      ...(url !== undefined ? repoColumns(deps.masterKey, url) : {}),
      ...(branch !== undefined ? { gitBranch: branch } : {}),
    };
  }

  async function get(organizationId: string, id: string): Promise<MigrationRow> {
    const row = await repo.get(organizationId, id);
    if (!row) throw notFound("Migration");
    return row;
  }

  /** The API's migrations, each with where its environment is served (one lookup for all of them). */
  async function views(organizationId: string, ms: MigrationRow[]) {
    const linked = ms.flatMap((m) => (m.environmentId === null ? [] : [m.environmentId]));
    const urls = linked.length > 0 && deps.environmentUrls ? await deps.environmentUrls(organizationId, linked) : new Map<string, string | null>();
    return ms.map((m) => migrationView(m, m.environmentId === null ? null : (urls.get(m.environmentId) ?? null)));
  }

  return {
    /**
     * Seals the userinfo of repository URLs written in clear before migration 0024 (run at
     * start, as projects' are); start hands the sealed userinfo to the project it makes.
     */
    sealStoredCredentials(): Promise<number> {
      return sealClearCredentials(repo, deps.masterKey);
    },

    /** The API's migration, with where its environment is served. */
    async view(m: MigrationRow) {
      const [v] = await views(m.organizationId, [m]);
      return v!;
    },

    get,

    async create(
      organizationId: string,
      input: { source_type: string; project_name: string; vendor_project_name?: string | undefined; vendor_branch?: string | undefined; git_repo_url?: string | undefined; git_branch?: string | undefined; data_processing_consent: boolean },
      caller: Caller,
    ): Promise<MigrationRow> {
      if (input.data_processing_consent !== true) {
        throw new DomainError("consent_required", "data_processing_consent must be true: the backup holds personal data Berth will store and process for this migration");
      }
      return repo.insert({
        organizationId,
        sourceType: input.source_type,
        projectName: input.project_name.trim(),
        vendorProjectName: input.vendor_project_name ?? null,
        vendorBranch: input.vendor_branch ?? null,
        ...gitColumns(input.git_repo_url, input.git_branch),
        dataProcessingConsentAt: deps.clock.now(),
        createdBy: caller.userId,
      });
    },

    async list(organizationId: string, q: { status?: string | undefined; page: number; page_size: number }) {
      const { rows, total } = await repo.list(organizationId, { status: q.status, limit: q.page_size, offset: (q.page - 1) * q.page_size });
      return { items: await views(organizationId, rows), total, page: q.page, page_size: q.page_size, pages: Math.ceil(total / q.page_size) };
    },

    /** Marks a migration failed with a message for the person (error_message) and its event. */
    async fail(id: string, message: string): Promise<MigrationRow | undefined> {
      return repo.update(id, { status: "failed", errorMessage: message }, { from: ["pending", "uploading", "importing", "analyzed", "ready", "processing"] });
    },

    async configure(
      organizationId: string,
      id: string,
      input: {
        target_vm_id: string;
        project_name?: string | undefined;
        target_domain?: string | null | undefined;
        git_repo_url?: string | null | undefined;
        git_branch?: string | null | undefined;
        production?: boolean | undefined;
      },
    ): Promise<MigrationRow> {
      const m = await get(organizationId, id);
      if (!CONFIGURABLE.includes(m.status as MigrationStatus)) {
        throw new DomainError("migration_not_configurable", `Migration ${id} is ${m.status}: it can be configured once its backup has been analysed, and until it starts`);
      }
      if (!(await deps.servers.exists(organizationId, input.target_vm_id))) throw new DomainError("server_not_found", `Server ${input.target_vm_id} not found in this organisation`);
      const domain = input.target_domain?.trim().toLowerCase() || null;
      if (domain !== null && !/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/.test(domain)) {
        throw new DomainError("invalid_domain", `${JSON.stringify(domain)} is not a host name of two labels or more`);
      }
      const row = await repo.update(
        id,
        {
          status: "ready",
          targetServerId: input.target_vm_id,
          targetDomain: domain,
          configuredAt: deps.clock.now(),
          ...(input.project_name !== undefined ? { projectName: input.project_name.trim() } : {}),
          ...gitColumns(input.git_repo_url, input.git_branch),
          ...(input.production !== undefined ? { production: input.production } : {}),
        },
        { from: CONFIGURABLE },
      );
      if (!row) throw new DomainError("migration_not_configurable", `Migration ${id} changed state; ask again`);
      return row;
    },

    /** Cancels; a running migration's deployment is cancelled too (its agent stops and puts back what the restore touched). */
    async cancel(organizationId: string, id: string, caller: Caller): Promise<MigrationRow> {
      const m = await get(organizationId, id);
      if (NOT_CANCELLABLE.includes(m.status as MigrationStatus)) throw new DomainError("migration_not_cancellable", `Migration ${id} is ${m.status}: there is nothing to cancel`);
      const row = await repo.update(id, { status: "cancelled", currentStep: null }, { from: [m.status] });
      if (!row) throw new DomainError("migration_not_cancellable", `Migration ${id} changed state; ask again`);
      if (m.status === "processing" && m.deploymentId && deps.cancelDeployment) await deps.cancelDeployment(m.deploymentId, `user:${caller.userId}`);
      // An unfinished upload goes now; stored bytes are the cleanup job's (intake/backup-bytes.ts).
      if (m.uploadId && deps.discardUpload) await deps.discardUpload(m.uploadId).catch(() => undefined);
      return row;
    },

    async retry(organizationId: string, id: string): Promise<MigrationRow> {
      const m = await get(organizationId, id);
      if (m.status !== "failed") throw new DomainError("migration_not_retryable", `Migration ${id} is ${m.status}: only a failed migration can be retried`);
      const target = retryTarget(m);
      const row = await repo.update(
        id,
        { status: target.status, retryCount: m.retryCount + 1, errorMessage: null, currentStep: target.reanalyze ? STEPS.analyzing : null, bytesRemovedAt: null },
        { from: ["failed"] },
      );
      if (!row) throw new DomainError("migration_not_retryable", `Migration ${id} changed state; ask again`);
      if (target.reanalyze) await deps.queue.analyze(id);
      return row;
    },

    /** Deletes the record and the backup's bytes (stored or half-uploaded); refused while running on a server. */
    async delete(organizationId: string, id: string): Promise<{ storage_deleted: boolean }> {
      const m = await get(organizationId, id);
      if (RUNNING.includes(m.status as MigrationStatus)) throw new DomainError("migration_in_progress", `Migration ${id} is running: cancel it first`);
      await deps.removeBytes(m);
      await repo.delete(id);
      return { storage_deleted: m.storageKey !== null || m.uploadId !== null };
    },
  };
}
export type RecordService = ReturnType<typeof createRecordService>;
