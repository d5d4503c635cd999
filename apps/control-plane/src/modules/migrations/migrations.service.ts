// Migrations of an ERP backup from elsewhere (platform spec 4.3): the record and its state
// machine, the backup's arrival in the backup store (upload tiers, import from a URL, each
// ending with the integrity check), the analysis of the stored backup, the configuration,
// and the cleanup of bytes nobody will use. Executing the 12 steps (start, unlink) is
// migration-execution.ts'; following them, migration-progress.ts.
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Clock } from "../../lib/clock.ts";
import { withoutCredentials } from "../../lib/git-credentials.ts";
import { checkGitBranch } from "../../lib/git-source.ts";
import { repoColumns } from "../projects/projects.service.ts";
import { ObjectStoreError, type ObjectStore } from "../../lib/object-store/index.ts";
import { capacityOf } from "../servers/capacity.ts";
import type { ServersRepo } from "../servers/servers.repo.ts";
import type { MigrationRow, MigrationsRepo } from "./migrations.repo.ts";
import type { AnalysisFields } from "./migration-schemas.ts";
import type { MigrationRequirements } from "./migration-requirements.ts";
import { advance, stepsOfMigration, stepsView } from "./migration-steps.ts";
import { DEFAULT_UPLOAD_QUOTA_BYTES, quotaRefusal } from "./upload-limits.ts";
import {
  ACCEPTS_BACKUP,
  CONFIGURABLE,
  MAX_UPLOAD_BYTES,
  NOT_CANCELLABLE,
  PART_URL_TTL_SECONDS,
  partSizeFor,
  retryTarget,
  RUNNING,
  TIER_LIMITS,
  type TierLimits,
  STEPS,
  tierOf,
  type MigrationStatus,
  type UploadTier,
} from "./migration-states.ts";

/** What the analysis reads: the stored backup's size, and its bytes whole or by range. */
export interface BackupSource {
  size: number;
  open(range?: { start: number; end: number }): Promise<Readable>;
}
/**
 * The analysis of a stored backup (modules/migrations/analysis, wired at merge): resolves
 * with the fields of the analysis result, rejects with { code, message } when the file is not
 * a backup it can read (its message becomes the migration's error_message).
 */
export type AnalyzeBackup = (source: BackupSource, options?: { signal?: AbortSignal }) => Promise<AnalysisFields>;

export interface Caller {
  userId: string;
}

/** A migration about to receive a backup: nothing of an earlier one is left on its record. */
const NO_BACKUP_YET = {
  progressPercent: 0,
  errorMessage: null,
  receivedBytes: 0,
  storage: null,
  storageKey: null,
  storedSha256: null,
  storedSizeBytes: null,
  analysis: null,
  bytesRemovedAt: null,
} as const;

export const storageKeyOf = (m: { organizationId: string; id: string }) => `migrations/${m.organizationId}/${m.id}/backup`;

/** Whether the stored backup's SHA-256 was declared by its sender and verified, or computed on receipt (none declared); null before it is stored. */
export const sha256Source = (m: Pick<MigrationRow, "storedSha256" | "declaredSha256">) => (m.storedSha256 === null ? null : m.declaredSha256 === null ? ("computed" as const) : ("declared" as const));

/** The API's migration; `environmentUrl`: where the linked environment is served (null when none). */
export function migrationView(m: MigrationRow, environmentUrl: string | null = null) {
  return {
    id: m.id,
    organization_id: m.organizationId,
    source_type: m.sourceType as "vendor_paas",
    status: m.status as MigrationStatus,
    progress_percent: m.progressPercent,
    current_step: m.currentStep,
    project_name: m.projectName,
    vendor_project_name: m.vendorProjectName,
    vendor_branch: m.vendorBranch,
    // Stored without credentials (sealed apart); a row from before that still never shows them.
    git_repo_url: m.gitRepoUrl === null ? null : withoutCredentials(m.gitRepoUrl),
    git_branch: m.gitBranch,
    file_name: m.fileName,
    file_size_bytes: m.declaredSizeBytes,
    upload_tier: m.uploadTier as UploadTier | "import" | null,
    bytes_received: m.receivedBytes,
    sha256: m.storedSha256,
    sha256_source: sha256Source(m),
    erp_version_detected: m.erpVersionDetected,
    database_size_bytes: m.databaseSizeBytes,
    filestore_size_bytes: m.filestoreSizeBytes,
    recommended_cpu: m.recommendedCpu,
    recommended_ram_mb: m.recommendedRamMb,
    recommended_disk_gb: m.recommendedDiskGb,
    estimated_monthly_cost: m.estimatedMonthlyCost,
    vendor_equivalent_cost: m.vendorEquivalentCost,
    monthly_savings: m.monthlySavings,
    target_vm_id: m.targetServerId,
    target_domain: m.targetDomain,
    production: m.production,
    project_id: m.projectId,
    environment_id: m.environmentId,
    environment_url: environmentUrl,
    deployment_id: m.deploymentId,
    steps: m.steps === null ? null : stepsView(stepsOfMigration(m)),
    error_message: m.errorMessage,
    retry_count: m.retryCount,
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

/** Queues background work (pg-boss, see migration-jobs.ts). */
export interface MigrationQueue {
  analyze(migrationId: string): Promise<void>;
  importUrl(migrationId: string): Promise<void>;
}

/**
 * Why a migration takes no bytes of an upload now (null: it takes them): not uploading any
 * more (cancelled, failed, …) or never initialised. The upload routes ask it before a chunk,
 * and the tus uploads again once a chunk has arrived (a cancel may come while it is sent).
 */
export function notUploading(m: MigrationRow): DomainError | null {
  if (m.status === "uploading" && m.uploadTier !== null && m.declaredSizeBytes !== null) return null;
  return new DomainError("upload_not_initialized", `Migration ${m.id} is ${m.status}: call upload/init first`);
}

/** The migration, if it takes bytes now through an endpoint of `tiers`; else the refusal is thrown. */
function takesBytes(m: MigrationRow, tiers: readonly UploadTier[]): MigrationRow {
  const refused = notUploading(m);
  if (refused) throw refused;
  if (!tiers.includes(m.uploadTier as UploadTier)) {
    throw new DomainError("wrong_upload_tier", `Migration ${m.id} was given ${m.uploadTier} for ${m.declaredSizeBytes} bytes; this endpoint takes ${tiers.join(" or ")}`);
  }
  return m;
}

export function createMigrationsService(deps: {
  repo: MigrationsRepo;
  servers: Pick<ServersRepo, "exists" | "withFigures" | "placedEnvironments">;
  store: ObjectStore;
  clock: Clock;
  analyze: AnalyzeBackup;
  /** What the target must have for the backup (migration-requirements.ts), listed with the analysis. */
  requirements: Pick<MigrationRequirements, "check">;
  /** Removes what a resumable upload left (tus-uploads.ts); nothing there is no error. */
  discardUpload?: (uploadId: string) => Promise<void>;
  /** How long a failed migration's bytes are kept for a retry before the cleanup job removes them (default 7 days). */
  failedRetentionMs?: number;
  /** Where tiers begin (default: platform spec 4.3, 50 MB, 500 MB, 5 GB). */
  tierLimits?: TierLimits;
  /** Where the organisation's environments among `ids` are served (https://…), in one lookup; absent: environment_url stays null. */
  environmentUrls?: (organizationId: string, environmentIds: string[]) => Promise<Map<string, string | null>>;
  /** Cancels the deployment a running migration is (the agent is told); absent: nothing to tell. */
  cancelDeployment?: (deploymentId: string, by: string) => Promise<void>;
  /** Bytes an organisation's migration backups may take, stored and under way (default: upload-limits.ts, 200 GiB). */
  uploadQuotaBytes?: number;
  /** Seals the credentials of a repository URL (as projects do). */
  masterKey: Buffer;
}) {
  const { repo, store } = deps;
  const quota = deps.uploadQuotaBytes ?? DEFAULT_UPLOAD_QUOTA_BYTES;
  let queue: MigrationQueue | null = null;

  /** Bytes the migration's backup may still take within its organisation's quota (the other migrations' bytes counted). */
  async function uploadRoom(m: MigrationRow): Promise<number> {
    return Math.max(0, quota - (await repo.uploadBytesOf(m.organizationId, m.id)));
  }

  /** Refuses (upload_quota_exceeded) a backup of `bytes` for the migration when its organisation's quota has no room for it. */
  async function checkQuota(m: MigrationRow, bytes: number): Promise<void> {
    const refused = quotaRefusal(await repo.uploadBytesOf(m.organizationId, m.id), bytes, quota);
    if (refused) throw refused;
  }

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

  function requireQueue(): MigrationQueue {
    if (!queue) throw new DomainError("jobs_unavailable", "Background jobs are not running on this replica; try again shortly");
    return queue;
  }

  /** Marks a migration failed with a message for the person (error_message) and its event. */
  async function fail(id: string, message: string): Promise<MigrationRow | undefined> {
    return repo.update(id, { status: "failed", errorMessage: message }, { from: ["pending", "uploading", "importing", "analyzed", "ready", "processing"] });
  }

  const S3_UPLOAD = "s3:";

  async function removeBytes(m: MigrationRow): Promise<void> {
    if (m.storageKey) await store.delete(m.storageKey);
    if (m.uploadId?.startsWith(S3_UPLOAD)) await store.parts?.abort(storageKeyOf(m), m.uploadId.slice(S3_UPLOAD.length));
    else if (m.uploadId && deps.discardUpload) await deps.discardUpload(m.uploadId);
  }

  /** The migration, if it may take a (new) backup now; the caller then removes the bytes of any earlier one. */
  async function acceptingBackup(organizationId: string, id: string, how: "uploaded" | "imported"): Promise<MigrationRow> {
    const m = await get(organizationId, id);
    if (!ACCEPTS_BACKUP.includes(m.status as MigrationStatus)) {
      throw new DomainError("migration_not_uploadable", `Migration ${id} is ${m.status}: a backup can be ${how} while it is pending, uploading or failed`);
    }
    return m;
  }

  /** The integrity check of bytes already in the store (parts completed in the bucket): read back, measured, removed if wrong. */
  async function verifyStored(m: MigrationRow, key: string): Promise<MigrationRow> {
    const hash = createHash("sha256");
    let size = 0;
    for await (const chunk of await store.get(key)) {
      size += (chunk as Buffer).length;
      hash.update(chunk as Buffer);
    }
    const sha256 = hash.digest("hex");
    if (size !== m.declaredSizeBytes || (m.declaredSha256 !== null && sha256 !== m.declaredSha256)) {
      await store.delete(key);
      const message = `Integrity check failed: received ${size} bytes with sha256 ${sha256}, but ${m.declaredSizeBytes} bytes${m.declaredSha256 === null ? "" : ` with sha256 ${m.declaredSha256}`} were declared; nothing was kept, upload the backup again`;
      await repo.update(m.id, { status: "failed", errorMessage: message, currentStep: STEPS.verifying, uploadId: null }, { from: ["uploading"] });
      throw new DomainError("upload_checksum_mismatch", message);
    }
    const row = await repo.update(
      m.id,
      { storage: store.kind, storageKey: key, storedSha256: sha256, storedSizeBytes: size, receivedBytes: size, currentStep: STEPS.analyzing, uploadId: null },
      { from: ["uploading"] },
    );
    if (!row) {
      await store.delete(key).catch(() => undefined);
      throw new DomainError("migration_not_uploadable", `Migration ${m.id} was cancelled while its backup arrived; nothing was kept`);
    }
    await requireQueue().analyze(m.id);
    return row;
  }

  /**
   * store.put of exactly `size` bytes, when no SHA-256 was declared: a byte past the size stops
   * the write, fewer removes what was written; either is the store's object_mismatch.
   */
  async function putOfSize(key: string, body: NodeJS.ReadableStream, size: number) {
    const mismatch = (got: string) => new ObjectStoreError("object_mismatch", `${key}: received ${got} bytes, but ${size} bytes were declared`);
    const bounded = Readable.from(
      (async function* () {
        let seen = 0;
        for await (const chunk of body as AsyncIterable<Buffer>) {
          seen += chunk.length;
          if (seen > size) throw mismatch(`more than ${size}`);
          yield chunk;
        }
      })(),
    );
    const stored = await store.put(key, bounded);
    if (stored.size_bytes !== size) {
      await store.delete(key).catch(() => undefined);
      throw mismatch(String(stored.size_bytes));
    }
    return stored;
  }

  /** The API's migrations, each with where its environment is served (one lookup for all of them). */
  async function views(organizationId: string, ms: MigrationRow[]) {
    const linked = ms.flatMap((m) => (m.environmentId === null ? [] : [m.environmentId]));
    const urls = linked.length > 0 && deps.environmentUrls ? await deps.environmentUrls(organizationId, linked) : new Map<string, string | null>();
    return ms.map((m) => migrationView(m, m.environmentId === null ? null : (urls.get(m.environmentId) ?? null)));
  }

  /** The API's migration, with where its environment is served. */
  async function view(m: MigrationRow) {
    const [v] = await views(m.organizationId, [m]);
    return v!;
  }

  return {
    view,

    /** Wired once the replica's jobs run (migration-jobs.ts). */
    setQueue(q: MigrationQueue) {
      queue = q;
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

    /**
     * upload/init: the tier for the declared size, and the upload's expectations recorded
     * (size, and SHA-256 when given here; else the upload itself declares it). A new init
     * replaces an unfinished upload (its bytes are discarded).
     */
    async initUpload(organizationId: string, id: string, input: { file_name: string; file_size: number; sha256?: string | undefined }) {
      const m = await acceptingBackup(organizationId, id, "uploaded");
      if (input.file_size > MAX_UPLOAD_BYTES) throw new DomainError("validation_error", `A backup may be at most ${MAX_UPLOAD_BYTES} bytes`);
      await checkQuota(m, input.file_size);
      await removeBytes(m);
      const tier = tierOf(input.file_size, deps.tierLimits ?? TIER_LIMITS);
      // Tiers 3 and 4 on a bucket: parallel parts straight to it (presigned part URLs).
      const parts = (tier === "tier_3" || tier === "tier_4") && store.parts ? { uploadId: await store.parts.start(storageKeyOf(m)), partSize: partSizeFor(input.file_size) } : null;
      const row = await repo.update(
        id,
        {
          ...NO_BACKUP_YET,
          status: "uploading",
          currentStep: STEPS.uploading,
          fileName: input.file_name,
          uploadTier: tier,
          declaredSizeBytes: input.file_size,
          declaredSha256: input.sha256?.toLowerCase() ?? null,
          uploadId: parts ? `${S3_UPLOAD}${parts.uploadId}` : null,
          importUrl: null,
        },
        { from: ACCEPTS_BACKUP },
      );
      if (!row) throw new DomainError("migration_not_uploadable", `Migration ${id} changed state; ask again`);
      return { row, tier, parts: parts ? { partSize: parts.partSize, partCount: Math.ceil(input.file_size / parts.partSize) } : null };
    },

    /** Presigned URLs of parts of a bucket multipart upload (tiers 3 and 4 on S3), valid 1 hour. */
    async partUrls(organizationId: string, id: string, partNumbers: number[]) {
      const m = await get(organizationId, id);
      if (m.status !== "uploading" || !m.uploadId?.startsWith(S3_UPLOAD) || !store.parts) {
        throw new DomainError("upload_not_initialized", `Migration ${id} has no parallel-part upload: call upload/init (tiers 3 and 4 on an S3 backup store)`);
      }
      const count = Math.ceil(m.declaredSizeBytes! / partSizeFor(m.declaredSizeBytes!));
      const bad = partNumbers.find((n) => n < 1 || n > count);
      if (bad !== undefined) throw new DomainError("validation_error", `Part numbers go from 1 to ${count}; ${bad} is not one`);
      const expiresAt = new Date(deps.clock.now().getTime() + PART_URL_TTL_SECONDS * 1000).toISOString();
      const uploadId = m.uploadId.slice(S3_UPLOAD.length);
      return Promise.all(partNumbers.map(async (n) => ({ part_number: n, url: await store.parts!.partUrl(storageKeyOf(m), uploadId, n, PART_URL_TTL_SECONDS), expires_at: expiresAt })));
    },

    /** Completes a bucket multipart upload from its parts' ETags, then the integrity check and the analysis. */
    async completeParts(organizationId: string, id: string, parts: { part_number: number; etag: string }[]): Promise<MigrationRow> {
      const m = await get(organizationId, id);
      if (m.status !== "uploading" || !m.uploadId?.startsWith(S3_UPLOAD) || !store.parts) {
        throw new DomainError("upload_not_initialized", `Migration ${id} has no parallel-part upload: call upload/init (tiers 3 and 4 on an S3 backup store)`);
      }
      const key = storageKeyOf(m);
      await repo.update(m.id, { currentStep: STEPS.verifying }, { from: ["uploading"] });
      try {
        await store.parts.complete(key, m.uploadId.slice(S3_UPLOAD.length), parts);
      } catch (error) {
        await repo.update(m.id, { currentStep: STEPS.uploading }, { from: ["uploading"] });
        throw new DomainError("upload_incomplete", `The bucket refused to complete the upload (${(error as Error).name}): send every part, then complete with each part's ETag`);
      }
      return verifyStored(m, key);
    },

    /** The migration a chunk or file of an upload belongs to, checked for the tier it was given. */
    async uploading(organizationId: string, id: string, tiers: readonly UploadTier[]): Promise<MigrationRow> {
      return takesBytes(await get(organizationId, id), tiers);
    },

    /**
     * uploading() for a request to the resumable upload `uploadId` (none: its creation), in
     * the same read: `finished` when the migration's backup arrived through that upload,
     * whatever the migration went on to. Its URL then answers HEAD with the whole length as
     * the offset (tus: complete), so a client that lost the answer to its last PATCH learns
     * that it is done rather than to start again.
     */
    async resumable(organizationId: string, id: string, uploadId: string | undefined, tiers: readonly UploadTier[]): Promise<{ m: MigrationRow; finished: boolean }> {
      const m = await get(organizationId, id);
      if (uploadId !== undefined && m.uploadId === uploadId && m.storageKey !== null && m.storedSizeBytes !== null) return { m, finished: true };
      return { m: takesBytes(m, tiers), finished: false };
    },

    uploadRoom,
    checkQuota,

    /** Ids of the organisation's migrations taking an upload now (the tus parts' bound per organisation). */
    uploadingIds: (organizationId: string) => repo.uploadingIds(organizationId),

    async noteUploadId(id: string, uploadId: string): Promise<void> {
      await repo.update(id, { uploadId }, { from: ["uploading"], event: false });
    },

    async noteProgress(id: string, receivedBytes: number): Promise<void> {
      await repo.update(id, { receivedBytes }, { from: ["uploading", "importing"] });
    },

    /**
     * Streams a backup into the store with the integrity check: kept and queued for analysis
     * when it matches, else removed, the migration failed with the reason, and
     * upload_checksum_mismatch thrown. The size is always checked; the SHA-256 when the sender
     * declared one (at init, or now: `sha256`). Without one (platform spec 4.3 names none) the
     * store's digest, computed while it wrote, is recorded and shown (sha256_source computed),
     * as S3 and Stripe do: never refused for the lack of a checksum.
     */
    async receive(m: MigrationRow, body: NodeJS.ReadableStream, declared: { size: number; sha256: string | null }): Promise<MigrationRow> {
      const sha256 = (m.declaredSha256 ?? declared.sha256)?.toLowerCase() ?? null;
      const key = storageKeyOf(m);
      await repo.update(m.id, { currentStep: STEPS.verifying, declaredSha256: sha256 }, { from: ["uploading", "importing"] });
      let stored;
      try {
        stored = sha256 === null ? await putOfSize(key, body, declared.size) : await store.put(key, body, { expect: { size_bytes: declared.size, sha256 } });
      } catch (error) {
        if (error instanceof ObjectStoreError && error.code === "object_mismatch") {
          const message = `Integrity check failed: ${error.message.replace(/^[^:]*: /, "")}; nothing was kept, upload the backup again`;
          await repo.update(m.id, { status: "failed", errorMessage: message, currentStep: STEPS.verifying, uploadId: null }, { from: ["uploading", "importing"] });
          throw new DomainError("upload_checksum_mismatch", message);
        }
        throw error;
      }
      const row = await repo.update(
        m.id,
        // The upload's id stays: its URL then answers HEAD with "complete" (resumable()).
        { storage: store.kind, storageKey: key, storedSha256: stored.sha256, storedSizeBytes: stored.size_bytes, receivedBytes: stored.size_bytes, currentStep: STEPS.analyzing },
        { from: ["uploading", "importing"] },
      );
      if (!row) {
        // Cancelled (or deleted) while the bytes arrived: they belong to nothing.
        await store.delete(key).catch(() => undefined);
        throw new DomainError("migration_not_uploadable", `Migration ${m.id} was cancelled while its backup arrived; nothing was kept`);
      }
      await requireQueue().analyze(m.id);
      return row;
    },

    /** The analysis job: reads the stored backup and records what it found (or why it could not). */
    async runAnalysis(id: string, signal?: AbortSignal): Promise<void> {
      const m = await repo.byId(id);
      if (!m || m.storageKey === null || m.currentStep !== STEPS.analyzing || !["uploading", "importing"].includes(m.status)) return;
      const key = m.storageKey;
      const size = m.storedSizeBytes ?? 0;
      const source: BackupSource = {
        size,
        open: async (range) => (await store.get(key, range ? { range } : {})) as Readable,
      };
      let a: AnalysisFields;
      try {
        a = await deps.analyze(source, signal ? { signal } : {});
      } catch (error) {
        const message = (error as { message?: string } | null)?.message ?? String(error);
        // The analysis' own refusals carry a stable code (BackupAnalysisErrorCode), shown first.
        const code = (error as { code?: unknown } | null)?.code;
        await fail(id, typeof code === "string" && /^[a-z][a-z_]*$/.test(code) ? `Analysis failed (${code}): ${message}` : `Analysis failed: ${message}`);
        return;
      }
      await repo.update(
        id,
        {
          status: "analyzed",
          currentStep: null,
          analysis: a,
          erpVersionDetected: a.erp_version,
          databaseSizeBytes: a.database_size_bytes,
          filestoreSizeBytes: a.filestore_size_bytes,
          recommendedCpu: a.recommended_cpu,
          recommendedRamMb: a.recommended_ram_mb,
          recommendedDiskGb: a.recommended_disk_gb,
          estimatedMonthlyCost: a.estimated_monthly_cost,
          vendorEquivalentCost: a.vendor_equivalent_cost,
          monthlySavings: a.monthly_savings,
          errorMessage: null,
        },
        { from: ["uploading", "importing"] },
      );
    },

    async analysis(organizationId: string, id: string) {
      const m = await get(organizationId, id);
      if (m.analysis === null) throw new DomainError("migration_not_analyzed", `Migration ${id} has no analysis yet (it is ${m.status}${m.currentStep ? `, ${m.currentStep}` : ""})`);
      const analysis = m.analysis as AnalysisFields;
      return { migration_id: m.id, ...analysis, sha256: m.storedSha256, sha256_source: sha256Source(m), requirements: await deps.requirements.check({ organizationId: m.organizationId, environmentId: m.environmentId, analysis }) };
    },

    /** import-url: records the URL and queues the download (migration-jobs.ts, url-import.ts). */
    async importUrl(organizationId: string, id: string, input: { cloud_url: string; sha256?: string | undefined; file_size?: number | undefined }) {
      const m = await acceptingBackup(organizationId, id, "imported");
      await checkQuota(m, input.file_size ?? 0);
      await removeBytes(m);
      const name = decodeURIComponent(new URL(input.cloud_url).pathname.split("/").pop() ?? "") || "backup";
      const row = await repo.update(
        id,
        {
          ...NO_BACKUP_YET,
          status: "importing",
          currentStep: STEPS.importing,
          fileName: name.slice(0, 255),
          uploadTier: "import",
          importUrl: input.cloud_url,
          declaredSizeBytes: input.file_size ?? null,
          declaredSha256: input.sha256?.toLowerCase() ?? null,
          uploadId: null,
        },
        { from: ACCEPTS_BACKUP },
      );
      if (!row) throw new DomainError("migration_not_uploadable", `Migration ${id} changed state; ask again`);
      await requireQueue().importUrl(id);
      return row;
    },

    fail,

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
      // An unfinished upload goes now; stored bytes are the cleanup job's (migration-jobs.ts).
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
      if (target.reanalyze) await requireQueue().analyze(id);
      return row;
    },

    /** Deletes the record and the backup's bytes (stored or half-uploaded); refused while running on a server. */
    async delete(organizationId: string, id: string): Promise<{ storage_deleted: boolean }> {
      const m = await get(organizationId, id);
      if (RUNNING.includes(m.status as MigrationStatus)) throw new DomainError("migration_in_progress", `Migration ${id} is running: cancel it first`);
      await removeBytes(m);
      await repo.delete(id);
      return { storage_deleted: m.storageKey !== null || m.uploadId !== null };
    },

    /** The organisation's servers with room for the recommendation, from their live figures. */
    async availableServers(organizationId: string, id: string) {
      const m = await get(organizationId, id);
      if (m.recommendedCpu === null || m.recommendedRamMb === null) {
        throw new DomainError("migration_not_analyzed", `Migration ${id} has no analysis yet: available servers follow its recommendation`);
      }
      const [servers, placed] = await Promise.all([deps.servers.withFigures(organizationId), deps.servers.placedEnvironments(organizationId)]);
      const needDisk = m.recommendedDiskGb ?? 0;
      const out = [];
      for (const s of servers) {
        const on = placed.filter((e) => e.server_id === s.id);
        const allocated = on.reduce((a, e) => ({ cpuCores: a.cpuCores + e.cpu_cores, ramMb: a.ramMb + e.ram_mb, diskGb: a.diskGb + e.disk_gb }), { cpuCores: 0, ramMb: 0, diskGb: 0 });
        const live = s.sampled_at ? { ramUsedMb: s.ram_used_mb!, ramTotalMb: s.ram_total_mb!, diskUsedGb: s.disk_used_gb!, diskTotalGb: s.disk_total_gb! } : null;
        const c = capacityOf({ cpuCores: s.cpu_cores, ramMb: s.ram_mb, diskGb: s.disk_gb }, allocated, live);
        if (c.room === "unknown" || c.free_cpu_cores < m.recommendedCpu || c.free_ram_mb < m.recommendedRamMb || c.free_disk_gb < needDisk) continue;
        out.push({
          id: s.id,
          name: s.name,
          hostname: s.hostname,
          cpu_cores: s.cpu_cores,
          memory_gb: Math.round((live ? live.ramTotalMb : s.ram_mb) / 102.4) / 10,
          disk_gb: live ? live.diskTotalGb : s.disk_gb,
          available_cpu: c.free_cpu_cores,
          available_memory_gb: Math.round(c.free_ram_mb / 102.4) / 10,
          available_disk_gb: c.free_disk_gb,
        });
      }
      return out;
    },

    /** The reconcile job: running migrations whose deployment ended unseen end as it did. How many. */
    async reconcile(): Promise<number> {
      let n = 0;
      for (const { m, deploymentStatus, deploymentError } of await repo.stalled()) {
        if (deploymentStatus === "success") {
          const steps = advance(stepsOfMigration(m), { kind: "succeeded" });
          await repo.update(m.id, { status: "completed", steps, progressPercent: 100, currentStep: "completed" }, { from: ["processing"] });
        } else {
          const steps = advance(stepsOfMigration(m), { kind: "failed" });
          const why = deploymentError ?? `the deployment was ${deploymentStatus}`;
          await repo.update(m.id, { status: "failed", steps, errorMessage: `The migration's deployment ended without finishing: ${why}` }, { from: ["processing"] });
        }
        n++;
      }
      return n;
    },

    /**
     * The cleanup job: the bytes of cancelled migrations, and of failed ones older than the
     * retention (kept that long for a retry), are removed; the records stay. How many.
     */
    async cleanup(): Promise<number> {
      const before = new Date(deps.clock.now().getTime() - (deps.failedRetentionMs ?? 7 * 24 * 3600_000));
      let n = 0;
      for (const m of await repo.withBytesToRemove(before)) {
        await removeBytes(m);
        await repo.markBytesRemoved(m.id);
        n++;
      }
      return n;
    },
  };
}
export type MigrationsService = ReturnType<typeof createMigrationsService>;
