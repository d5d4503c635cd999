// The analysis a migration runs once its backup is stored and checked: the streaming analysis
// (analysis/analyze.ts) as the migration records it. The result is kept whole (format, dump
// path, file store location, warnings: what the run needs later); GET analysis shows the
// spec's fields.
import { analyzeBackup } from "./analysis/analyze.ts";
import type { AnalyzeBackup } from "./migrations.service.ts";

export const analyzeMigrationBackup: AnalyzeBackup = async (source, options) => {
  const a = await analyzeBackup(source, options?.signal ? { signal: options.signal } : {});
  return { ...a, postgres_version: a.postgres.server_version ?? a.postgres.manifest_pg_version, pg_dump_version: a.postgres.pg_dump_version };
};
