// The bounds of what migrations may upload, named once here. An organisation's migration
// backups (stored, and being uploaded or imported: the size each declared) take at most its
// quota (BERTH_MIGRATION_QUOTA_BYTES, 200 GiB by default), checked at upload/init, at the
// creation of a resumable upload and at import-url, and an import without a Content-Length is
// cut off where the quota ends. The tus concatenation's parts are bounded in number (per
// upload and per organisation) and together in bytes (the size declared at upload/init); a
// migration has one unfinished upload that is not a part, and an upload file idle for a day
// is removed by the cleanup job.
import { DomainError } from "../../../lib/errors.ts";
import { GB } from "../record/migration-states.ts";

/** BERTH_MIGRATION_QUOTA_BYTES' default: 200 GiB, a few of the largest ERP backups seen. */
export const DEFAULT_UPLOAD_QUOTA_BYTES = 200 * GB;
/** Parts (Upload-Concat: partial) one upload may have at once; a final concatenation lists at most as many. */
export const MAX_PARTS_PER_UPLOAD = 100;
/** Parts all the uploads of one organisation may have at once. */
export const MAX_PARTS_PER_ORGANIZATION = 1000;
/**
 * How long a resumable upload's file (or a part's) is kept without receiving a byte before the
 * cleanup job removes it: a day, past a client's night of sleep, short of files piling up.
 * The client then creates the upload again (its migration still takes one until cancelled).
 */
export const UNFINISHED_UPLOAD_IDLE_MS = 24 * 3600_000;

const gib = (bytes: number) => `${(bytes / GB).toFixed(bytes % GB === 0 ? 0 : 2)} GiB`;

/** The refusal of `adding` bytes when the organisation's migrations already take `used` of its `quota`; null when they fit. */
export function quotaRefusal(used: number, adding: number, quota: number): DomainError | null {
  if (used + adding <= quota) return null;
  return new DomainError(
    "upload_quota_exceeded",
    `The organisation's migration backups would take ${used + adding} bytes (${gib(used + adding)}: ${used} stored or being uploaded, ${adding} more), over its quota of ${quota} bytes (${gib(quota)}); delete migrations whose backups are no longer needed, or ask the operator to raise BERTH_MIGRATION_QUOTA_BYTES`,
  );
}
