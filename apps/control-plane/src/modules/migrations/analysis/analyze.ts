// Analysis of an uploaded ERP backup (platform spec §2.5 analysis result, §4.3 formats and
// versions): reads the stored file as a stream (read-backup.ts), then turns what it found
// into the analysis result: ERP version, sizes, modules split into standard and custom,
// users, partners, the recommended server and the cost comparison, and what the target must
// have: the Enterprise add-ons when Enterprise modules are installed, a PostgreSQL at least as
// new as the dump (migration-requirements.ts compares both with the target). A file that
// cannot be migrated (not a database of the ERP: ERP_CORE_TABLES missing) rejects with a
// BackupAnalysisError whose message is meant for the user.
import { BackupAnalysisError, type BackupAnalysis, type BackupSource } from "./analysis-types.ts";
import { parseErpVersion, postgresMajorRequired, supportedErpVersion, type ParsedErpVersion } from "./erp-versions.ts";
import { classifyModules, OFFICIAL_MODULES } from "./official-modules.ts";
import { boundedWarnings, keepModule, MAX_MODULE_NAME_BYTES, MAX_MODULES } from "./analysis-limits.ts";
import { readBackup } from "./read-backup.ts";
import { ERP_CORE_TABLES, type DumpFacts } from "./sql-dump-scanner.ts";
import { DEFAULT_COST_SETTINGS, recommend, type CostSettings } from "./sizing.ts";
import { DEFAULT_INFLATE_LIMITS, type InflateLimits } from "./zip-archive.ts";

export { BackupAnalysisError } from "./analysis-types.ts";
export type { BackupAnalysis, BackupAnalysisErrorCode, BackupFormat, BackupSource } from "./analysis-types.ts";

export interface AnalyzeOptions {
  signal?: AbortSignal;
  /** Zip/gzip bomb limits (DEFAULT_INFLATE_LIMITS). */
  limits?: InflateLimits;
  /** Prices of the cost comparison (DEFAULT_COST_SETTINGS). */
  prices?: CostSettings;
  /** Official module names (OFFICIAL_MODULES). */
  officialModules?: ReadonlySet<string>;
}

/** Reads a stored backup once, as a stream, and returns its analysis; rejects with BackupAnalysisError when it cannot be migrated. */
export async function analyzeBackup(source: BackupSource, options: AnalyzeOptions = {}): Promise<BackupAnalysis> {
  const { signal } = options;
  let read;
  try {
    signal?.throwIfAborted();
    read = await readBackup(source, options.limits ?? DEFAULT_INFLATE_LIMITS, signal);
  } catch (err) {
    if (signal?.aborted) throw new BackupAnalysisError("aborted", "the analysis was cancelled");
    throw err;
  }
  const { dump, manifest, warnings } = read;

  const fromManifest = manifest?.version ? parseErpVersion(manifest.version) : null;
  const fromDump = dump.base_version ? parseErpVersion(dump.base_version) : null;
  refuseWithoutErpTables(dump);
  const version: ParsedErpVersion | null = fromManifest ?? fromDump;
  if (!version) {
    throw new BackupAnalysisError("erp_version_unknown", "the ERP version could not be read: the backup has no usable manifest.json and its dump has no base module");
  }
  // An online database's dump can carry a plain manifest version; either source saying SaaS decides.
  if (fromDump?.saas && !version.saas) supportedErpVersion(fromDump);
  const erpVersion = supportedErpVersion(version);
  if (fromManifest && fromDump && `${fromManifest.major}.${fromManifest.minor}` !== `${fromDump.major}.${fromDump.minor}`) {
    warnings.push(`manifest.json says version ${fromManifest.raw} but the dump's base module is ${fromDump.raw}; ${erpVersion} is used`);
  }

  let installed = dump.installed_modules;
  let modulesOmitted = dump.modules_omitted;
  if (!dump.has_module_table) {
    installed = new Map();
    for (const m of manifest?.modules ?? []) if (!keepModule(installed, m, null)) modulesOmitted++;
  }
  if (modulesOmitted > 0) {
    warnings.push(`${modulesOmitted} more installed modules (beyond ${MAX_MODULES}, or with names over ${MAX_MODULE_NAME_BYTES} bytes) are not listed`);
  }
  const { standard, custom } = classifyModules(installed, options.officialModules ?? OFFICIAL_MODULES);
  const enterprise = enterpriseModules(installed);
  if (enterprise.length > 0) {
    warnings.push(
      `${enterprise.length} installed module${enterprise.length === 1 ? " is" : "s are"} Enterprise (${enterprise.slice(0, 5).join(", ")}${enterprise.length > 5 ? ", …" : ""}): the migrated environment needs the Enterprise add-ons, or its interface will not load`,
    );
  }

  let filestoreBytes = read.filestore?.bytes ?? 0;
  if (!read.filestore && dump.attachment_files > 0) {
    filestoreBytes = dump.attachment_bytes;
    warnings.push(
      `the backup has no file store, but ${dump.attachment_files} attachments (${dump.attachment_bytes} bytes) refer to one: their files will be missing after the migration`,
    );
  }
  if (dump.skipped_long_rows > 0) warnings.push(`${dump.skipped_long_rows} very long rows of the tables read were skipped`);

  const sizing = recommend(
    { internalUsers: dump.internal_users, databaseBytes: dump.bytes, filestoreBytes, hasCustomModules: custom.length > 0 },
    options.prices ?? DEFAULT_COST_SETTINGS,
  );
  return {
    erp_version: erpVersion,
    erp_version_source: fromManifest ? "manifest" : "dump",
    database_name: manifest?.db_name ?? dump.database_name,
    database_size_bytes: dump.bytes,
    filestore_size_bytes: filestoreBytes,
    total_size_bytes: dump.bytes + filestoreBytes,
    total_modules: standard.length + custom.length + modulesOmitted,
    standard_modules: standard,
    custom_modules: custom,
    partner_count: dump.active_partners,
    user_count: dump.internal_users,
    ...sizing,
    format: read.format,
    dump_path: read.dumpPath,
    filestore: read.filestore ? { kind: read.filestore.kind, path: read.filestore.path, file_count: read.filestore.file_count } : null,
    postgres: { server_version: dump.server_version, pg_dump_version: dump.pg_dump_version, manifest_pg_version: manifest?.pg_version ?? null },
    postgres_major_required: postgresMajorRequired(erpVersion, { pg_dump: dump.pg_dump_version, server: dump.server_version ?? manifest?.pg_version ?? null }),
    enterprise_modules: enterprise,
    has_manifest: read.hasManifest,
    ...boundedWarnings(warnings, read.warningsOmitted),
    dump_hazards: dump.hazards.map(({ line, kind, text }) => ({ line, kind, text })),
    dump_hazard_count: dump.hazard_count,
  };
}

/** Refuses a dump that is not a whole database of the ERP: one of ERP_CORE_TABLES is missing (or it is no PostgreSQL dump at all). */
function refuseWithoutErpTables(dump: DumpFacts): void {
  const missing = ERP_CORE_TABLES.filter((t) => !dump.core_tables.has(t));
  if (missing.length === 0) return;
  if (!dump.looks_like_pg_dump && dump.core_tables.size === 0) {
    throw new BackupAnalysisError("not_a_backup", "not a backup: no PostgreSQL database dump found in the file");
  }
  throw new BackupAnalysisError(
    "erp_tables_missing",
    `not a database of the ERP: the dump has no ${missing.join(", ")} table${missing.length === 1 ? "" : "s"}, which every database of the ERP has (${ERP_CORE_TABLES.join(", ")}); upload a backup of the whole database made by the ERP's database manager (zip format) or by pg_dump`,
  );
}

/** Installed modules that exist only in the ERP's Enterprise add-ons: license OEEL-1, or web_enterprise (whatever its row says). */
export function enterpriseModules(installed: ReadonlyMap<string, string | null>): string[] {
  return [...installed].filter(([name, license]) => license === "OEEL-1" || name === "web_enterprise").map(([name]) => name).sort();
}
