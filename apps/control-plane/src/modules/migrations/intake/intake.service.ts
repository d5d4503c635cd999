// The arrival of a migration's backup (platform spec 4.3): upload/init choosing the tier,
// the direct upload's and the resumable uploads' checks, the bucket's parallel parts, and the
// import from a URL. The bytes go through the integrity check in backup-receipt.ts; a new
// backup reserves its declared size of the organisation's quota (upload-quota.ts), then
// removes the bytes of an earlier one (backup-bytes.ts).
import { DomainError, notFound } from "../../../lib/errors.ts";
import type { Clock } from "../../../lib/clock.ts";
import type { ObjectStore } from "../../../lib/object-store/index.ts";
import type { MigrationQueue } from "../migration-queue.ts";
import type { MigrationRow, MigrationsRepo } from "../record/migrations.repo.ts";
import { ACCEPTS_BACKUP, MAX_UPLOAD_BYTES, PART_URL_TTL_SECONDS, partSizeFor, STEPS, TIER_LIMITS, tierOf, type MigrationStatus, type TierLimits, type UploadTier } from "../record/migration-states.ts";
import type { BackupReceipt } from "./backup-receipt.ts";
import { S3_UPLOAD, storageKeyOf } from "./stored-backup.ts";
import type { UploadQuota } from "./upload-quota.ts";
import { takesBytes } from "./upload-state.ts";

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

export function createIntakeService(deps: {
  repo: Pick<MigrationsRepo, "get" | "update">;
  store: ObjectStore;
  clock: Clock;
  queue: Pick<MigrationQueue, "importUrl">;
  receipt: Pick<BackupReceipt, "verifyStored">;
  quota: Pick<UploadQuota, "reserve">;
  /** Removes the bytes of an earlier backup (backup-bytes.ts). */
  removeBytes: (m: MigrationRow) => Promise<void>;
  /** Where tiers begin (default: platform spec 4.3, 50 MB, 500 MB, 5 GB). */
  tierLimits?: TierLimits | undefined;
}) {
  const { repo, store } = deps;

  async function get(organizationId: string, id: string): Promise<MigrationRow> {
    const row = await repo.get(organizationId, id);
    if (!row) throw notFound("Migration");
    return row;
  }

  /** The migration, if it may take a (new) backup now; the caller then removes the bytes of any earlier one. */
  async function acceptingBackup(organizationId: string, id: string, how: "uploaded" | "imported"): Promise<MigrationRow> {
    const m = await get(organizationId, id);
    if (!ACCEPTS_BACKUP.includes(m.status as MigrationStatus)) {
      throw new DomainError("migration_not_uploadable", `Migration ${id} is ${m.status}: a backup can be ${how} while it is pending, uploading or failed`);
    }
    return m;
  }

  return {
    /**
     * upload/init: the tier for the declared size, and the upload's expectations recorded
     * (size, and SHA-256 when given here; else the upload itself declares it). A new init
     * replaces an unfinished upload (its bytes are discarded).
     */
    async initUpload(organizationId: string, id: string, input: { file_name: string; file_size: number; sha256?: string | undefined }) {
      const m = await acceptingBackup(organizationId, id, "uploaded");
      if (input.file_size > MAX_UPLOAD_BYTES) throw new DomainError("validation_error", `A backup may be at most ${MAX_UPLOAD_BYTES} bytes`);
      const tier = tierOf(input.file_size, deps.tierLimits ?? TIER_LIMITS);
      // The declared size is reserved before the earlier backup's bytes go: a refusal keeps them.
      let row = await deps.quota.reserve(
        m,
        input.file_size,
        {
          ...NO_BACKUP_YET,
          status: "uploading",
          currentStep: STEPS.uploading,
          fileName: input.file_name,
          uploadTier: tier,
          declaredSizeBytes: input.file_size,
          declaredSha256: input.sha256?.toLowerCase() ?? null,
          uploadId: null,
          importUrl: null,
        },
        ACCEPTS_BACKUP,
      );
      if (!row) throw new DomainError("migration_not_uploadable", `Migration ${id} changed state; ask again`);
      await deps.removeBytes(m);
      // Tiers 3 and 4 on a bucket: parallel parts straight to it (presigned part URLs).
      const parts = (tier === "tier_3" || tier === "tier_4") && store.parts ? { uploadId: await store.parts.start(storageKeyOf(m)), partSize: partSizeFor(input.file_size) } : null;
      if (parts) {
        row = await repo.update(id, { uploadId: `${S3_UPLOAD}${parts.uploadId}` }, { from: ["uploading"], event: false });
        if (!row) throw new DomainError("migration_not_uploadable", `Migration ${id} changed state; ask again`);
      }
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
      return deps.receipt.verifyStored(m, key);
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

    /** import-url: records the URL and queues the download (migration-jobs.ts, url-import.ts). */
    async importUrl(organizationId: string, id: string, input: { cloud_url: string; sha256?: string | undefined; file_size?: number | undefined }) {
      const m = await acceptingBackup(organizationId, id, "imported");
      const name = decodeURIComponent(new URL(input.cloud_url).pathname.split("/").pop() ?? "") || "backup";
      const row = await deps.quota.reserve(
        m,
        input.file_size ?? 0,
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
        ACCEPTS_BACKUP,
      );
      if (!row) throw new DomainError("migration_not_uploadable", `Migration ${id} changed state; ask again`);
      await deps.removeBytes(m);
      await deps.queue.importUrl(id);
      return row;
    },
  };
}
export type IntakeService = ReturnType<typeof createIntakeService>;
