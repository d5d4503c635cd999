// What analysing an uploaded ERP backup produces (the platform spec's analysis result, §2.5,
// plus what the migration run needs later), the source it reads, and its one error type.
import type { Readable } from "node:stream";
import type { Recommendation } from "./sizing.ts";

/** A stored backup: its size and a way to stream all of it, or bytes start..end (both included). */
export interface BackupSource {
  size: number;
  open(range?: { start: number; end: number }): Promise<Readable>;
}

export type BackupFormat = "zip" | "tar" | "tar.gz" | "sql" | "pg_custom";

/** Where the file store sits inside the archive, if anywhere. */
export interface FilestoreLocation {
  /** "directory": members under `path/`; "archive": one compressed member (e.g. filestore.tar.gz). */
  kind: "directory" | "archive";
  path: string;
  file_count: number;
}

/** The spec's analysis result (§2.5; the sizing and cost figures are sizing.ts's Recommendation), and what a run needs. */
export interface BackupAnalysis extends Recommendation {
  /** major.minor, e.g. "17.0". */
  erp_version: string;
  /** Where erp_version came from. */
  erp_version_source: "manifest" | "dump";
  /** From the manifest (db_name) or the dump (CREATE DATABASE / \connect); null when neither says. */
  database_name: string | null;
  /** Bytes of the SQL dump as restored (uncompressed); the restored database adds its indexes. */
  database_size_bytes: number;
  filestore_size_bytes: number;
  total_size_bytes: number;
  total_modules: number;
  standard_modules: string[];
  custom_modules: string[];
  partner_count: number;
  user_count: number;

  format: BackupFormat;
  /** The dump's member path inside the archive; null for a bare SQL file. */
  dump_path: string | null;
  filestore: FilestoreLocation | null;
  /** PostgreSQL versions from the dump header (and the manifest's pg_version). */
  postgres: { server_version: string | null; pg_dump_version: string | null; manifest_pg_version: string | null };
  has_manifest: boolean;
  /** The oldest PostgreSQL major the dump restores into: its pg_dump's, its source server's, or the ERP version's minimum (12; 13 for 19.0), whichever is newest. */
  postgres_major_required: number;
  /** Installed modules that need the ERP's Enterprise add-ons (license OEEL-1, web_enterprise); empty for a Community database. */
  enterprise_modules: string[];
  /** Things the user should know that do not stop the migration: like ones collapsed into one line with their count, at most MAX_WARNINGS (analysis-limits.ts). */
  warnings: string[];
  /** Warnings past MAX_WARNINGS, left out of `warnings`. */
  warnings_omitted: number;
  /** What in the dump the agent refuses to load (psql meta-commands, server-side programs, files, roles; in a custom-format dump, in the SQL pg_restore runs of its TOC entries), the first 20; a migration with any does not start (dump_unsafe). */
  dump_hazards: DumpHazard[];
  /** All of them, dump_hazards being the first 20. */
  dump_hazard_count: number;
}

/** A hazard of a dump (@berth/protocol PsqlFinding, without its byte offset). */
export interface DumpHazard {
  /** The line in a plain dump; in a custom-format dump, the line in its TOC entry's SQL, whose text then starts with the entry (e.g. "FUNCTION pwn() (TOC entry 40): "). */
  line: number;
  kind: string;
  text: string;
}

export type BackupAnalysisErrorCode =
  | "empty_file"
  | "not_a_backup"
  | "empty_archive"
  | "no_database_dump"
  | "corrupt_archive"
  | "archive_too_large"
  | "archive_too_many_members"
  | "duplicate_dump_member"
  | "unsupported_dump_format"
  | "erp_version_unknown"
  | "erp_version_deprecated"
  | "erp_version_unsupported"
  | "saas_version"
  | "erp_tables_missing"
  | "aborted";

/** A backup that cannot be used, with a message meant for the person who uploaded it. */
export class BackupAnalysisError extends Error {
  constructor(
    readonly code: BackupAnalysisErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "BackupAnalysisError";
  }
}
