// The migration's states (platform spec 3.3) and the rules that say what may happen in each,
// named once here: the service asks these, the tests check them as a table.

export const MIGRATION_STATUSES = ["pending", "uploading", "importing", "analyzed", "ready", "processing", "completed", "failed", "cancelled", "unlinked"] as const;
export type MigrationStatus = (typeof MIGRATION_STATUSES)[number];

export const SOURCE_TYPES = ["vendor_paas", "on_premise", "vendor_online", "other_paas"] as const;

/** Where a backup may (again) be uploaded or imported: before one arrived, or after one failed. */
export const ACCEPTS_BACKUP: readonly MigrationStatus[] = ["pending", "uploading", "importing", "failed"];
/** Where configure may be called: once analysed, and again while not started. */
export const CONFIGURABLE: readonly MigrationStatus[] = ["analyzed", "ready"];
/** Nothing left to cancel. */
export const NOT_CANCELLABLE: readonly MigrationStatus[] = ["completed", "cancelled", "unlinked"];
/** Running on an agent: neither deleted nor re-uploaded under its feet. */
export const RUNNING: readonly MigrationStatus[] = ["processing"];

/** current_step values outside the 12 execution steps. */
export const STEPS = {
  uploading: "uploading",
  importing: "downloading",
  verifying: "verifying",
  analyzing: "analyzing",
} as const;

export const MB = 1024 * 1024;
export const GB = 1024 * MB;

/** Upload tiers by declared size (platform spec 4.3). */
export const TIER_LIMITS: TierLimits = { tier_1: 50 * MB, tier_2: 500 * MB, tier_3: 5 * GB };
/** Sizes where tiers 2, 3 and 4 begin (tests lower them to send real parts of small files). */
export interface TierLimits {
  tier_1: number;
  tier_2: number;
  tier_3: number;
}
export type UploadTier = "tier_1" | "tier_2" | "tier_3" | "tier_4";
/** The largest backup an upload may declare (1 TiB): a bound, not a promise of disk space. */
export const MAX_UPLOAD_BYTES = 1024 * GB;
/** The chunk size clients of the resumable tiers send (10 MiB). */
export const CHUNK_BYTES = 10 * MB;

export function tierOf(size: number, limits: TierLimits = TIER_LIMITS): UploadTier {
  if (size < limits.tier_1) return "tier_1";
  if (size <= limits.tier_2) return "tier_2";
  if (size <= limits.tier_3) return "tier_3";
  return "tier_4";
}

/**
 * What retry leads to from failed: the analysis again when the backup is stored but was not
 * analysed, ready when it was (start must be called again), pending when no backup arrived.
 */
export function retryTarget(m: { storageKey: string | null; analysis: unknown }): { status: MigrationStatus; reanalyze: boolean } {
  if (m.storageKey !== null && m.analysis === null) return { status: "uploading", reanalyze: true };
  if (m.storageKey !== null) return { status: "ready", reanalyze: false };
  return { status: "pending", reanalyze: false };
}

/** S3 multipart part size for a size: 16 MiB, or more so that 10,000 parts (S3's maximum) hold it, in whole MiB. */
export function partSizeFor(size: number): number {
  return Math.max(16 * MB, Math.ceil(size / 10_000 / MB) * MB);
}
/** How long a presigned part URL is valid (1 hour). */
export const PART_URL_TTL_SECONDS = 3600;
