// backup: a custom-format pg_dump of the ERP's database (streamed out of the PostgreSQL
// container) and a tar.gz of the data dir (file store), each with its size and sha256 in
// manifest.json. Written under a .partial name and renamed when complete, so a backup
// that exists is a whole one.
//
// With `upload` (the control plane's backup store), each file is streamed to the control
// plane as soon as it is written, the manifest last; the control plane keeps a file only if
// it computes the declared size and sha256. Any failed upload fails the backup (its local
// files are removed: a failed backup is restored from nowhere). Once stored, the backup is
// marked so, and the environment keeps only its newest few stored backups here
// (backupsKeptLocally, default 2): the store has them all, and a restore fetches the rest.
import { mkdir, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { STATE_DIR_MODE } from "../../state/state-dir.ts";
import {
  BACKUP_FORMAT,
  DB_DUMP_FILE,
  FILESTORE_FILE,
  fileSum,
  hashedFile,
  MANIFEST_FILE,
  markStored,
  pruneStoredBackups,
  writeManifest,
  type BackupFile,
} from "./backup-files.ts";
import { uploadFile } from "./backup-transfer.ts";
import { backupDir, ERP_DB_NAME, environmentLayout } from "../environment/environment-layout.ts";
import { requireErpContainer } from "../environment/erp-container.ts";
import { DEFAULT_BACKUPS_KEPT_LOCALLY, timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";
import { dumpDatabase, runningPostgres } from "../environment/postgres.ts";
import { runSteps } from "../runner/step-runner.ts";

export function createBackupHandler(deps: ExecutorDeps): CommandHandler<"backup"> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "backup", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const dir = backupDir(layout, params.backup_id);
      const partial = `${dir}.partial`;
      const files: BackupFile[] = [];
      const stored: BackupFile[] = [];
      let createdAt = "";
      const upload = params.upload;
      if (upload !== undefined && deps.controlPlaneUrl === undefined) {
        throw new CommandError("backup_upload_failed", "this agent knows no control plane URL to upload the backup to");
      }

      await runSteps(
        "backup",
        ctx,
        {
          initializing: async (step) => {
            if (await exists(dir)) {
              throw new CommandError("backup_exists", `backup ${params.backup_id} already exists for this environment`);
            }
            await mkdir(dirname(dir), { recursive: true, mode: STATE_DIR_MODE });
            step.log("info", `Backing up environment ${params.environment_id} as ${params.backup_id}`);
            return "Prepared";
          },
          connecting: async () => {
            const version = await docker.version();
            return `Docker ${version.version} reachable`;
          },
          completed: async (step) => {
            /** Streams a file just written to the control plane's store (when asked to). */
            const send = async (file: BackupFile) => {
              if (upload === undefined) return;
              const started = Date.now();
              await uploadFile({ base: deps.controlPlaneUrl!, path: upload.path, token: upload.token, file: `${partial}/${file.name}`, sum: file, signal: step.signal });
              stored.push(file);
              const seconds = Math.max((Date.now() - started) / 1000, 0.001);
              step.log("info", `Uploaded ${file.name} to the backup store (${file.size} bytes, ${(file.size / 1e6 / seconds).toFixed(1)} MB/s); checksum confirmed`);
            };
            const erp = await requireErpContainer(docker, layout);
            const db = await runningPostgres(docker, layout, step, { readyTimeoutMs: timing.dbReadyTimeoutMs, clock: deps.clock });
            const dbImage = (await docker.inspectContainer(db))?.image ?? "unknown";
            const erpImage = (await docker.inspectContainer(erp.id))?.image ?? "unknown";
            await rm(partial, { recursive: true, force: true });
            await mkdir(partial, { mode: STATE_DIR_MODE });
            try {
              createdAt = deps.clock.now().toISOString();
              const dump = hashedFile(partial, DB_DUMP_FILE);
              await dumpDatabase(docker, db, dump.input, timing.dataTransferMs);
              files.push(await dump.done);
              step.log("info", `Dumped database "${ERP_DB_NAME}" (${files[0]?.size ?? 0} bytes, custom format)`);
              await send(files[0]!);

              const filestore = hashedFile(partial, FILESTORE_FILE, { gzip: true });
              // Read through Docker: the files belong to the ERP's user, and this works whether it runs or not.
              await docker.readArchive(erp.id, "/var/lib/odoo", filestore.input, timing.dataTransferMs);
              files.push(await filestore.done);
              step.log("info", `Archived the data dir (${files[1]?.size ?? 0} bytes gzipped)`);
              await send(files[1]!);

              writeManifest(partial, {
                format: BACKUP_FORMAT,
                backup_id: params.backup_id,
                environment_id: params.environment_id,
                created_at: createdAt,
                database: { name: ERP_DB_NAME, dump_format: "custom", image: dbImage },
                erp_image: erpImage,
                files,
              });
              await send(await fileSum(partial, MANIFEST_FILE));
              if (upload !== undefined) await markStored(partial);
              await rename(partial, dir);
            } catch (error) {
              await rm(partial, { recursive: true, force: true });
              throw error;
            }
            step.log("info", `Backup ${params.backup_id} written with checksums`, { files: files.map((f) => ({ ...f })) });
            if (upload !== undefined) {
              const keep = deps.backupsKeptLocally ?? DEFAULT_BACKUPS_KEPT_LOCALLY;
              const removed = await pruneStoredBackups(layout.backupsDir, keep).catch((error: unknown) => {
                step.log("warning", `Could not remove older local backups: ${String(error)}`);
                return [];
              });
              for (const old of removed) step.log("info", `Local copy of backup ${old.backup_id} of ${old.created_at} removed (it is in the backup store; ${keep} kept here)`);
            }
            return `Backup ${params.backup_id} complete`;
          },
        },
        timing.steps.backup,
      );

      return {
        backup_id: params.backup_id,
        files: files.map((f) => ({ ...f })),
        created_at: createdAt,
        // Every file the control plane's store received, the manifest included (empty: not uploaded).
        stored: stored.map((f) => ({ ...f })),
      };
    });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
