// The organisation's migration quota (upload-limits.ts) against what its other migrations
// take: reserved at upload/init and at import-url (the check and the migration's new declared
// size written in one step, intake.repo.ts reserve), checked again at a tus creation, and the
// bound of a download.
import type { MigrationPatch, MigrationRow } from "../record/migrations.repo.ts";
import type { IntakeRepo } from "./intake.repo.ts";
import { DEFAULT_UPLOAD_QUOTA_BYTES, quotaRefusal } from "./upload-limits.ts";

export function createUploadQuota(deps: {
  repo: Pick<IntakeRepo, "uploadBytesOf" | "reserve">;
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

    /**
     * Takes `bytes` of the quota for the migration by applying `patch` (its new upload or
     * import, declaring them) when its status is one of `from`: refused (upload_quota_exceeded)
     * when they do not fit, as one step, so concurrent reservations of an organisation never
     * take more than its quota together. undefined when the status was another.
     */
    async reserve(m: MigrationRow, bytes: number, patch: MigrationPatch, from: readonly string[]): Promise<MigrationRow | undefined> {
      const { used, fits, row } = await deps.repo.reserve(m, bytes, quota, patch, from);
      if (!fits) throw quotaRefusal(used, bytes, quota)!;
      return row;
    },
  };
}
export type UploadQuota = ReturnType<typeof createUploadQuota>;
