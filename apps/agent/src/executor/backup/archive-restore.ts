// A restore from an ERP backup as the vendor's tools make it (a migration's upload): the one
// file is fetched from the control plane's store into the environment's backups (or reused
// when a copy there matches the signed size and sha256), then read once (erp-archive.ts): its
// dump loaded into the restore's new database (plain SQL with psql, sql-dump.ts; the custom
// format with pg_restore, custom-dump.ts; told apart by its first bytes), its file store written into the
// new data dir as filestore/<database>/..., owned by the ERP's user. The restore around it
// (verify, swap, health check, swap back) is the same as for a backup Berth made. A deploy
// that carries a migration's backup uses both too (../deploy/migration-restore.ts).
import { mkdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { RestoreParams } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { STATE_DIR_MODE } from "../../state/state-dir.ts";
import type { RestoreNames } from "../environment/database-swap.ts";
import { backupDir, ERP_DB_NAME, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { CUSTOM_DUMP_MAGIC, HeldInput, loadCustomDump, MAX_HELD_TOC_BYTES } from "../environment/custom-dump.ts";
import { loadSqlDump } from "../environment/sql-dump.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";
import { fileSum } from "./backup-files.ts";
import { fetchFile } from "./backup-transfer.ts";
import { fileStoreTar, readErpArchive, type ErpArchiveFormat } from "./erp-archive.ts";
import { writeIntoIncomingDataDir } from "./incoming-data-dir.ts";

type Archive = NonNullable<RestoreParams["archive"]>;

/** The archive on this server, fetched when no matching copy is here; returns its path. */
export async function archiveHere(input: {
  deps: Pick<ExecutorDeps, "controlPlaneUrl">;
  layout: EnvironmentLayout;
  backupId: string;
  archive: Archive;
  log: StepScope["log"];
  signal: AbortSignal;
}): Promise<string> {
  const { archive, log } = input;
  const dir = backupDir(input.layout, input.backupId);
  const path = join(dir, archive.file.name);
  const local = await fileSum(dir, archive.file.name).catch(() => null);
  if (local !== null && local.size === archive.file.size && local.sha256 === archive.file.sha256) {
    log("info", `The backup ${archive.file.name} is on this server already: nothing to fetch`);
    return path;
  }
  if (input.deps.controlPlaneUrl === undefined) throw new CommandError("backup_fetch_failed", "this agent knows no control plane URL to fetch the backup from");
  log("info", `Fetching ${archive.file.name} (${archive.file.size} bytes) from the control plane's store`);
  await mkdir(dir, { recursive: true, mode: STATE_DIR_MODE });
  const fetching = `${path}.fetching`;
  try {
    const started = Date.now();
    await fetchFile({ base: input.deps.controlPlaneUrl, path: archive.path, dest: fetching, sum: archive.file, signal: input.signal });
    await rename(fetching, path);
    const seconds = Math.max((Date.now() - started) / 1000, 0.001);
    log("info", `Fetched in ${seconds.toFixed(1)} s (${(archive.file.size / 1e6 / seconds).toFixed(1)} MB/s); it matches its signed sha256`);
  } catch (error) {
    await rm(fetching, { force: true });
    throw error;
  }
  return path;
}

/** Told as the archive is read, for progress: the dump starts and finishes loading, a file store member starts. */
export interface ArchiveProgress {
  dumpStarted?(): void;
  dumpLoaded?(): void;
  fileStarted?(): void;
}

export type DumpLoader = "psql" | "pg_restore";

/** Loads `dump` into the restore database `name` with the loader its format needs (its first bytes); returns which. */
export async function loadDump(docker: DockerClient, dbContainerId: string, name: string, dump: Readable, deadlineMs: number): Promise<DumpLoader> {
  const input = new HeldInput(dump, MAX_HELD_TOC_BYTES);
  if ((await input.head(CUSTOM_DUMP_MAGIC.length)).toString("latin1") === CUSTOM_DUMP_MAGIC) {
    await loadCustomDump(docker, dbContainerId, name, input, deadlineMs);
    return "pg_restore";
  }
  await loadSqlDump(docker, dbContainerId, name, input.release(), deadlineMs);
  return "psql";
}

/** Loads the archive's dump into the restore's new database and its file store into the new data dir. */
export async function loadArchive(input: {
  docker: DockerClient;
  dbContainerId: string;
  layout: EnvironmentLayout;
  /** The ERP image the file store's helper container is made from. */
  image: string;
  names: RestoreNames;
  path: string;
  extraLabels: Record<string, string> | undefined;
  deadlineMs: number;
  progress?: ArchiveProgress;
}): Promise<{ format: ErpArchiveFormat; dump: string; files: number; loader: DumpLoader }> {
  const { docker, names, progress } = input;
  let read: { format: ErpArchiveFormat; dump: string; files: number } | null = null;
  let loader: DumpLoader = "psql";
  await writeIntoIncomingDataDir(docker, input.layout, input.image, names, input.extraLabels, async (helper, user) => {
    // The ERP finds its file store under filestore/<database name>: "odoo" here, whatever it was called before.
    const tar = fileStoreTar(`filestore/${ERP_DB_NAME}/`, user);
    const writing = docker.writeArchive(helper, "/var/lib/odoo", tar.stream, input.deadlineMs);
    try {
      read = await readErpArchive(input.path, {
        onDump: async (dump) => {
          progress?.dumpStarted?.();
          loader = await loadDump(docker, input.dbContainerId, names.incomingDb, dump, input.deadlineMs);
          progress?.dumpLoaded?.();
        },
        onFile: (entry) => {
          progress?.fileStarted?.();
          return tar.add(entry);
        },
      });
    } finally {
      tar.finish();
      await writing;
    }
  });
  if (read === null) throw new Error("the archive was not read");
  return { ...(read as { format: ErpArchiveFormat; dump: string; files: number }), loader };
}
