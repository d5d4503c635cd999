// The bytes of a migration's backup nobody will use: removed from the store (and an
// unfinished upload, resumable or the bucket's parts) when the migration is deleted or given
// a new backup, and by the cleanup job for cancelled migrations and failed ones past the
// retention (kept that long for a retry), with the resumable upload files idle for
// UNFINISHED_UPLOAD_IDLE_MS (upload-limits.ts). The records stay.
import type { Clock } from "../../../lib/clock.ts";
import type { ObjectStore } from "../../../lib/object-store/index.ts";
import type { MigrationRow } from "../record/migrations.repo.ts";
import type { IntakeRepo } from "./intake.repo.ts";
import { S3_UPLOAD, storageKeyOf } from "./stored-backup.ts";
import { UNFINISHED_UPLOAD_IDLE_MS } from "./upload-limits.ts";

export function createBackupBytes(deps: {
  repo: Pick<IntakeRepo, "withBytesToRemove" | "markBytesRemoved">;
  store: ObjectStore;
  clock: Clock;
  /** Removes what a resumable upload left (tus-uploads.ts); nothing there is no error. */
  discardUpload?: (uploadId: string) => Promise<void>;
  /** Removes the resumable upload files idle since the date (tus-uploads.ts sweep); how many. */
  sweepUploads?: (idleBefore: Date) => Promise<number>;
  /** How long a failed migration's bytes are kept for a retry before the cleanup job removes them (default 7 days). */
  failedRetentionMs?: number;
}) {
  const { store } = deps;

  async function remove(m: MigrationRow): Promise<void> {
    if (m.storageKey) await store.delete(m.storageKey);
    if (m.uploadId?.startsWith(S3_UPLOAD)) await store.parts?.abort(storageKeyOf(m), m.uploadId.slice(S3_UPLOAD.length));
    else if (m.uploadId && deps.discardUpload) await deps.discardUpload(m.uploadId);
  }

  return {
    /** The backup's bytes, stored or half-uploaded, wherever they are. */
    remove,

    /**
     * The cleanup job: the bytes of cancelled migrations, and of failed ones older than the
     * retention, are removed (how many migrations), then the upload files idle for a day.
     */
    async cleanup(): Promise<number> {
      const now = deps.clock.now().getTime();
      const before = new Date(now - (deps.failedRetentionMs ?? 7 * 24 * 3600_000));
      let n = 0;
      for (const m of await deps.repo.withBytesToRemove(before)) {
        await remove(m);
        await deps.repo.markBytesRemoved(m.id);
        n++;
      }
      await deps.sweepUploads?.(new Date(now - UNFINISHED_UPLOAD_IDLE_MS));
      return n;
    },
  };
}
export type BackupBytes = ReturnType<typeof createBackupBytes>;
