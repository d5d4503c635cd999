// Where a restore finds the files of a backup in the control plane's store: a copy on this
// server whose manifest matches the signed checksums (this environment's backups, or the
// source environment's when it lives on this server too), else the store itself, through
// the signed link of the restore command, into this environment's backups. Every fetched
// file is checked against its signed size and sha256; the folder appears only when all are.
import { mkdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { RestoreParams } from "@berth/protocol";
import { STATE_DIR_MODE } from "../../state/state-dir.ts";
import { backupDir, environmentLayout, type EnvironmentLayout } from "../environment/environment-layout.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { fileSum, MANIFEST_FILE, markStored, type BackupManifest } from "./backup-files.ts";
import { fetchFile, type TransferFile } from "./backup-transfer.ts";

type Source = NonNullable<RestoreParams["source"]>;

/** Whether the folder holds this backup as signed: its manifest is the signed one (or lists the signed files). */
async function matches(dir: string, files: TransferFile[]): Promise<boolean> {
  const signedManifest = files.find((f) => f.name === MANIFEST_FILE);
  if (signedManifest) {
    const local = await fileSum(dir, MANIFEST_FILE).catch(() => null);
    return local !== null && local.size === signedManifest.size && local.sha256 === signedManifest.sha256;
  }
  const manifest = await readFile(join(dir, MANIFEST_FILE), "utf8").then((t) => JSON.parse(t) as BackupManifest, () => null);
  if (!manifest || !Array.isArray(manifest.files)) return false;
  return files.every((f) => manifest.files.some((m) => m.name === f.name && m.size === f.size && m.sha256 === f.sha256));
}

export async function localOrFetched(input: {
  deps: Pick<ExecutorDeps, "stateDir" | "controlPlaneUrl">;
  layout: EnvironmentLayout;
  backupId: string;
  source: Source;
  log: StepScope["log"];
  signal: AbortSignal;
}): Promise<{ dir: string; fetched: boolean }> {
  const { layout, backupId, source, log } = input;
  const own = backupDir(layout, backupId);
  const candidates = [own];
  if (source.environment_id !== layout.environmentId) candidates.push(backupDir(environmentLayout(input.deps.stateDir, source.environment_id), backupId));
  for (const dir of candidates) {
    if (await matches(dir, source.files)) {
      log("info", `Backup ${backupId} is on this server${dir === own ? "" : ` (in environment ${source.environment_id}'s backups)`}: nothing to fetch`);
      return { dir, fetched: false };
    }
  }
  if (input.deps.controlPlaneUrl === undefined) throw new CommandError("backup_fetch_failed", "this agent knows no control plane URL to fetch the backup from");
  const total = source.files.reduce((n, f) => n + f.size, 0);
  log("info", `Backup ${backupId} is not on this server: fetching ${source.files.length} files (${total} bytes) from the control plane's backup store`);
  const fetching = `${own}.fetching`;
  await rm(fetching, { recursive: true, force: true });
  await mkdir(fetching, { recursive: true, mode: STATE_DIR_MODE });
  try {
    const started = Date.now();
    for (const file of source.files) {
      await fetchFile({ base: input.deps.controlPlaneUrl, path: source.path, dest: join(fetching, file.name), sum: file, signal: input.signal });
    }
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    log("info", `Fetched ${total} bytes in ${seconds.toFixed(1)} s (${(total / 1e6 / seconds).toFixed(1)} MB/s); every file matches its signed sha256`);
    if (!(await stat(join(fetching, MANIFEST_FILE)).then(() => true, () => false))) {
      throw new CommandError("backup_corrupted", `backup ${backupId}: the store has no ${MANIFEST_FILE} for it`);
    }
    await markStored(fetching);
    // A copy here that did not match is replaced.
    await rm(own, { recursive: true, force: true });
    await rename(fetching, own);
  } catch (error) {
    await rm(fetching, { recursive: true, force: true });
    throw error;
  }
  return { dir: own, fetched: true };
}
