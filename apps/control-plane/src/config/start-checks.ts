// What `npm start` checks before it starts anything: every setting (config.ts), then the
// folders those settings name. Each problem is one line naming its setting.
import { SettingsError } from "@berth/protocol";
import { embeddedDataDirProblems } from "../db/embedded-data-dir.ts";
import { loadStartSettings, type StartSettings } from "../config.ts";
import { writableDirectoryProblem } from "./directories.ts";

/** The settings, or a SettingsError listing every problem with them or with their folders. */
export function checkedStartSettings(env: NodeJS.ProcessEnv = process.env): StartSettings {
  const settings = loadStartSettings(env);
  const dataDir = writableDirectoryProblem("BERTH_DATA_DIR", settings.config.dataDir);
  const problems = [
    dataDir,
    ...(dataDir === null && settings.config.databaseUrl === undefined ? embeddedDataDirProblems(settings.config.dataDir) : []),
    settings.backupStore.kind === "local" ? writableDirectoryProblem("BERTH_BACKUP_DIR", settings.backupStore.dir) : null,
    writableDirectoryProblem("BERTH_MIGRATION_UPLOAD_DIR", settings.migrationUploadDir),
  ].filter((p): p is string => p !== null);
  // Two settings may name one folder; say it once.
  if (problems.length > 0) throw new SettingsError([...new Set(problems)]);
  return settings;
}
