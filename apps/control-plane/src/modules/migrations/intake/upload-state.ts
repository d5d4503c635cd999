// Whether a migration takes the bytes of an upload now, and through which endpoints: the
// upload routes ask before a chunk, and the tus uploads again once a chunk has arrived (a
// cancel may come while it is sent).
import { DomainError } from "../../../lib/errors.ts";
import type { MigrationRow } from "../record/migrations.repo.ts";
import type { UploadTier } from "../record/migration-states.ts";

/**
 * Why a migration takes no bytes of an upload now (null: it takes them): not uploading any
 * more (cancelled, failed, …) or never initialised.
 */
export function notUploading(m: MigrationRow): DomainError | null {
  if (m.status === "uploading" && m.uploadTier !== null && m.declaredSizeBytes !== null) return null;
  return new DomainError("upload_not_initialized", `Migration ${m.id} is ${m.status}: call upload/init first`);
}

/** The migration, if it takes bytes now through an endpoint of `tiers`; else the refusal is thrown. */
export function takesBytes(m: MigrationRow, tiers: readonly UploadTier[]): MigrationRow {
  const refused = notUploading(m);
  if (refused) throw refused;
  if (!tiers.includes(m.uploadTier as UploadTier)) {
    throw new DomainError("wrong_upload_tier", `Migration ${m.id} was given ${m.uploadTier} for ${m.declaredSizeBytes} bytes; this endpoint takes ${tiers.join(" or ")}`);
  }
  return m;
}
