// The analysis a migration runs once its backup is stored and checked: the streaming analysis
// (analysis/analyze.ts) as the migration records it. The result is kept whole (format, dump
// path, file store location, warnings: what the run needs later); GET analysis shows the
// spec's fields.
import type { Readable } from "node:stream";
import { analyzeBackup } from "../analysis/analyze.ts";
import type { AnalysisFields } from "../record/migration-schemas.ts";

/** What the analysis reads: the stored backup's size, and its bytes whole or by range. */
export interface BackupSource {
  size: number;
  open(range?: { start: number; end: number }): Promise<Readable>;
}
/**
 * The analysis of a stored backup: resolves with the fields of the analysis result, rejects
 * with { code, message } when the file is not a backup it can read (its message becomes the
 * migration's error_message).
 */
export type AnalyzeBackup = (source: BackupSource, options?: { signal?: AbortSignal }) => Promise<AnalysisFields>;

export const analyzeMigrationBackup: AnalyzeBackup = async (source, options) => {
  const a = await analyzeBackup(source, options?.signal ? { signal: options.signal } : {});
  return { ...a, postgres_version: a.postgres.server_version ?? a.postgres.manifest_pg_version, pg_dump_version: a.postgres.pg_dump_version };
};
