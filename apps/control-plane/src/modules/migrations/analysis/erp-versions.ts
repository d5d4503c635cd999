// Which ERP versions a migrated backup may carry (platform spec §4.3, issue 16): 16.0 to 19.0
// are hosted; 13.0 to 15.0 are deprecated and refused with a message saying what to do;
// intermediary SaaS versions (saas~17.4) exist only on the vendor's online service.
import { ACTIVE_ERP_VERSIONS, DEPRECATED_ERP_VERSIONS } from "@berth/protocol";
import { BackupAnalysisError } from "./analysis-types.ts";

export { ACTIVE_ERP_VERSIONS, DEPRECATED_ERP_VERSIONS } from "@berth/protocol";

/** A version as written in a manifest or a module's latest_version, read as major.minor. */
export interface ParsedErpVersion {
  major: number;
  minor: number;
  saas: boolean;
  raw: string;
}

/**
 * Reads "17.0", "17.0+e-20250703", "17.0.1.3" (a module version), "saas~17.4" or
 * "saas~17.4.1.3"; null when it is none of these.
 */
export function parseErpVersion(raw: string): ParsedErpVersion | null {
  const m = /^\s*(saas~)?(\d{1,3})\.(\d{1,3})(?:[.+\-~].*)?\s*$/.exec(raw);
  if (!m) return null;
  return { major: Number(m[2]), minor: Number(m[3]), saas: m[1] !== undefined || Number(m[3]) !== 0, raw: raw.trim() };
}

/** major.minor of a supported version, or a BackupAnalysisError saying why it cannot be hosted. */
export function supportedErpVersion(version: ParsedErpVersion): string {
  const mm = `${version.major}.${version.minor}`;
  if (version.saas) {
    throw new BackupAnalysisError(
      "saas_version",
      `intermediary SaaS version ${version.raw.startsWith("saas~") ? version.raw.split(/[+]/)[0] : `saas~${mm}`} cannot be hosted outside the vendor's online service: upgrade the database to the next major version (${version.major + 1}.0) there first, then export a new backup`,
    );
  }
  if ((ACTIVE_ERP_VERSIONS as readonly string[]).includes(mm)) return mm;
  if ((DEPRECATED_ERP_VERSIONS as readonly string[]).includes(mm)) {
    throw new BackupAnalysisError(
      "erp_version_deprecated",
      `ERP version ${mm} is deprecated and can no longer be migrated: upgrade the database to ${ACTIVE_ERP_VERSIONS.at(-1)} or later first, then upload the upgraded backup`,
    );
  }
  throw new BackupAnalysisError(
    "erp_version_unsupported",
    `ERP version ${mm} is not supported: supported versions are ${ACTIVE_ERP_VERSIONS.join(", ")}`,
  );
}

/** The oldest PostgreSQL each hosted version runs on (the vendor's requirements): 19.0 needs 13, 16.0 to 18.0 need 12. */
export function minimumPostgresMajor(erpVersion: string): number {
  return Number(erpVersion.split(".")[0]) >= 19 ? 13 : 12;
}

/** The major of a PostgreSQL version as dumps and manifests write it ("17.2", "16.4 (Debian 16.4-1)", "9.6.24"), or null. */
export function postgresMajor(version: string | null): number | null {
  const m = /^\s*(\d{1,2})(?:\.|\s|$)/.exec(version ?? "");
  return m ? Number(m[1]) : null;
}

/**
 * The oldest PostgreSQL major the backup can be restored into: pg_dump writes SQL for its own
 * release (17 writes `SET transaction_timeout`, which 16 rejects) and the source server's
 * schema may use what its release has, so neither may be newer than the target; nor may the
 * target be older than the ERP version needs. An older dump into a newer server is fine.
 */
export function postgresMajorRequired(erpVersion: string, versions: { pg_dump: string | null; server: string | null }): number {
  return Math.max(minimumPostgresMajor(erpVersion), postgresMajor(versions.pg_dump) ?? 0, postgresMajor(versions.server) ?? 0);
}
