// The organisation's migration quota (upload-limits.ts) against what its other migrations
// take: at upload/init, at a tus creation, at import-url, and as the bound of a download.
import type { MigrationRow } from "../record/migrations.repo.ts";
import type { IntakeRepo } from "./intake.repo.ts";
import { DEFAULT_UPLOAD_QUOTA_BYTES, quotaRefusal } from "./upload-limits.ts";

export function createUploadQuota(deps: {
  repo: Pick<IntakeRepo, "uploadBytesOf">;
  /** Bytes an organisation's migration backups may take, stored and under way (default: upload-limits.ts, 200 GiB). */
  quotaBytes?: number | undefined;
}) {
  const quota = deps.quotaBytes ?? DEFAULT_UPLOAD_QUOTA_BYTES;
  return {
    /** Bytes the migration's backup may still take within its organisation's quota (the other migrations' bytes counted). */
    async room(m: MigrationRow): Promise<number> {
      return Math.max(0, quota - (await deps.repo.uploadBytesOf(m.organizationId, m.id)));
    },

    /** Refuses (upload_quota_exceeded) a backup of `bytes` for the migration when its organisation's quota has no room for it. */
    async check(m: MigrationRow, bytes: number): Promise<void> {
      const refused = quotaRefusal(await deps.repo.uploadBytesOf(m.organizationId, m.id), bytes, quota);
      if (refused) throw refused;
    },
  };
}
export type UploadQuota = ReturnType<typeof createUploadQuota>;
