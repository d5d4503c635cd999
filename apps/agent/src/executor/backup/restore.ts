// restore: a restore that cannot lose the database. Every file of the backup is checked
// against its manifest first; the dump is then loaded into a NEW database and the file store
// into a new folder while the live ones stay untouched (the ERP keeps serving), the copy is
// verified (restore-verification.ts), and only then is the ERP stopped and the copy swapped
// in by renames. The ERP must pass its health check on it, or everything is swapped back.
// The order, the names and how an interrupted restore is recovered: ../environment/database-swap.ts.
//
//   initializing           backup checked against its manifest; the ERP container found
//   initializing_database  (interrupted restore recovered) load odoo_restore_<id>, verify, file store into data-restore-<id>
//   starting_container     stop the ERP, swap, start it
//   health_check           healthy, or swap back, start the ERP as before and fail
//   completed              drop the previous database and file store
//
// A failure (or cancel) before the swap drops only the copy, and starts the ERP again if
// this restore had stopped it; after the swap and before a healthy check, it swaps back.
//
// With `source` (the backup is in the control plane's store; it may be another environment's,
// made on another server), the files come from this server when a copy here matches the
// signed checksums (this environment's, or the source environment's on the same server),
// else they are fetched from the store into this environment's backups and checked against
// the signed sizes and sha256 before anything else (fetch-backup.ts). With `archive` (an ERP
// backup as the vendor's tools make it: a migration's upload), the one file is fetched the same
// way and loaded by archive-restore.ts into the same new database and data dir. With
// `live_source` (copy-from, backup "fresh"), there is no backup: another environment of this
// server is copied now, its database streamed and its file store copied by name
// (live-copy.ts), into the same new database and data dir, and the rest is the same.
import { createReadStream } from "node:fs";
import { basename, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import type { DockerClient } from "../../docker/docker-client.ts";
import { DB_DUMP_FILE, FILESTORE_FILE, pruneStoredBackups, verifyBackup, type BackupManifest } from "./backup-files.ts";
import { localOrFetched } from "./fetch-backup.ts";
import { copyFileStore, liveSourceDatabase, streamDatabase } from "./live-copy.ts";
import { archiveHere, loadArchive } from "./archive-restore.ts";
import { writeIntoIncomingDataDir } from "./incoming-data-dir.ts";
import { neutralizeCopy } from "./neutralize.ts";
import { verifyRestoredDatabase } from "./restore-verification.ts";
import {
  clearRestoreJournal,
  createDatabase,
  discardIncoming,
  dropPrevious,
  newRestoreNames,
  restoreDump,
  swapBack,
  swapIn,
  writeRestoreJournal,
  type RestoreNames,
} from "../environment/database-swap.ts";
import { HEALTH_PATH, waitForHealth } from "../environment/health-check.ts";
import { backupDir, ERP_DB_NAME, environmentLayout, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf, requireErpContainer, stoppedReason, type ErpContainerRef } from "../environment/erp-container.ts";
import { erpUserOf } from "../environment/erp-image-user.ts";
import { DEFAULT_BACKUPS_KEPT_LOCALLY, timingOf, type ExecutorDeps, type ExecutorTiming } from "../runner/executor-deps.ts";
import { CommandError, type CommandHandler } from "../runner/handler-types.ts";
import { runningPostgres } from "../environment/postgres.ts";
import { runSteps, type StepScope } from "../runner/step-runner.ts";

export const ROLLED_BACK = "rolled back to the database as it was before the restore";

/** How far a restore got: what a failure has to undo. */
type Phase =
  /** Nothing live touched; a copy may be loading. */
  | "preparing"
  /** The ERP was stopped for the swap; nothing swapped yet. */
  | "stopped"
  /** The journal says "swapping": the copy may be live (or partly). */
  | "swapped"
  /** Swapped back after a failed health check. */
  | "rolled_back"
  /** Healthy on the copy: the restore stands, whatever happens next. */
  | "committed";

export function createRestoreHandler(deps: ExecutorDeps): CommandHandler<"restore"> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "restore", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      let dir = backupDir(layout, params.backup_id);
      let fetched = false;
      /** The ERP archive being restored (params.archive), once on this server. */
      let archive: string | null = null;
      /** The environment copied now (params.live_source) and its running database. */
      const live = params.live_source === undefined ? null : { layout: environmentLayout(deps.stateDir, params.live_source.environment_id), db: "" };
      let manifest: BackupManifest | null = null;
      let erp: ErpContainerRef | null = null;
      let db: string | null = null;
      let names: RestoreNames | null = null;
      let withFiles = false;
      let wasRunning = false;
      let hostPort: number | null = null;
      let phase: Phase = "preparing";
      const need = <T>(value: T | null): T => {
        if (value === null) throw new Error("a step ran before the step that prepares its input");
        return value;
      };

      /** Stops the ERP, swaps the previous database and file store back, starts the ERP as it was. */
      const rollBack = async (log: StepScope["log"]): Promise<void> => {
        const container = need(erp);
        await docker.stopContainer(container.id, timing.stopGraceSeconds);
        await swapBack(docker, need(db), layout, need(names), log);
        await clearRestoreJournal(layout);
        phase = "rolled_back";
        hostPort = null;
        if (wasRunning) {
          await docker.startContainer(container.id);
          hostPort = await hostPortOf(docker, container.id);
          log("info", `Started ERP container ${container.name} again on the database as it was before the restore`);
        }
      };

      /** After a failure or cancel: puts the environment back as it was before this restore. */
      const undo = async (error: unknown): Promise<unknown> => {
        const log: StepScope["log"] = (level, message, data) =>
          ctx.emit.log(level, message, { step: null, ...(data === undefined ? {} : { data }) });
        const reason = error instanceof Error ? error.message : String(error);
        const code = (error as { code?: unknown }).code;
        try {
          if (phase === "preparing" || phase === "stopped") {
            if (db !== null && names !== null) {
              await discardIncoming(docker, db, names);
              log("info", `Dropped ${names.incomingDb} and its file store folder; the live database was not touched`);
            }
            if (phase === "stopped") {
              await clearRestoreJournal(layout);
              if (wasRunning) {
                await docker.startContainer(need(erp).id);
                log("info", `Started ERP container ${need(erp).name} again: it runs as before the restore`);
              }
            }
            return error;
          }
          if (phase === "swapped") {
            await rollBack(log);
            log("warning", `Restore failed after the swap: ${ROLLED_BACK}`);
            return new CommandError(typeof code === "string" ? code : "restore_failed", `${reason}: ${ROLLED_BACK}`);
          }
          return error;
        } catch (undoError) {
          const why = undoError instanceof Error ? undoError.message : String(undoError);
          log("error", `Could not undo the restore: ${why}`);
          return new CommandError(
            "restore_failed",
            `${reason}; putting the previous database back failed too (${why}): the next restore, deploy or start finishes it`,
          );
        }
      };

      try {
        await runSteps(
          "restore",
          ctx,
          {
            initializing: async (step) => {
              if (live !== null) {
                if (params.copy === undefined) throw new CommandError("invalid_params", "live_source is only for a copy");
                if (live.layout.environmentId === params.environment_id) throw new CommandError("invalid_params", "an environment is not copied onto itself");
                live.db = await liveSourceDatabase(docker, live.layout);
                erp = await requireErpContainer(docker, layout);
                wasRunning = erp.state === "running";
                withFiles = true;
                step.log("info", `Copying environment ${live.layout.environmentId} of this server as it is now; it keeps serving and is only read`);
                return "Source found";
              }
              if (params.archive !== undefined) {
                archive = await archiveHere({ deps, layout, backupId: params.backup_id, archive: params.archive, log: step.log, signal: step.signal });
                erp = await requireErpContainer(docker, layout);
                wasRunning = erp.state === "running";
                return "Backup fetched and checked";
              }
              if (params.source !== undefined) {
                const copy = await localOrFetched({ deps, layout, backupId: params.backup_id, source: params.source, log: step.log, signal: step.signal });
                dir = copy.dir;
                fetched = copy.fetched;
              }
              manifest = await verifyBackup(dir, params.backup_id);
              step.log("info", `Backup ${params.backup_id} of ${manifest.created_at}: every file matches its checksum`);
              erp = await requireErpContainer(docker, layout);
              wasRunning = erp.state === "running";
              withFiles = manifest.files.some((f) => f.name === FILESTORE_FILE);
              return "Backup verified";
            },
            connecting: async () => {
              const version = await docker.version();
              return `Docker ${version.version} reachable`;
            },
            initializing_database: async (step) => {
              db = await runningPostgres(docker, layout, step, { readyTimeoutMs: timing.dbReadyTimeoutMs, clock: deps.clock });
              const n = newRestoreNames(layout, deps.clock.now());
              names = n;
              step.log(
                "info",
                `Restoring into a new database ${n.incomingDb}; the live database "${ERP_DB_NAME}" is not touched` +
                  (wasRunning ? " and the ERP keeps serving" : ""),
              );
              await createDatabase(docker, db, n.incomingDb);
              const image = await erpImage(docker, need(erp));
              /** A copy (another environment's backup, a migration that is not production) is neutralised and re-keyed before it can serve. */
              const dbId = db;
              const neutralizeIfCopy = async () => {
                if (params.copy === undefined && params.archive?.neutralize !== true) return;
                await neutralizeCopy({
                  docker,
                  layout,
                  dbContainerId: dbId,
                  image,
                  database: n.incomingDb,
                  baseUrl: params.copy?.base_url ?? null,
                  catchMail: params.copy?.catch_mail === true,
                  extraLabels: deps.extraLabels,
                  deadlineMs: timing.dataTransferMs,
                  signal: step.signal,
                  log: step.log,
                });
              };
              if (archive !== null) {
                const read = await loadArchive({ docker, dbContainerId: db, layout, image, names: n, path: archive, extraLabels: deps.extraLabels, deadlineMs: timing.dataTransferMs });
                step.log("info", `${read.loader} loaded ${read.dump} (${read.format}) into ${n.incomingDb} without error; ${read.files} file store files written into ${basename(n.incomingDir)}`);
                await neutralizeIfCopy();
                step.log("info", await verifyRestoredDatabase(docker, db, n.incomingDb));
                withFiles = true;
                return `Restored into ${n.incomingDb} and verified`;
              }
              if (live !== null) {
                let started = Date.now();
                const how = await streamDatabase(docker, { sourceDb: live.db, targetDb: db, incomingDb: n.incomingDb, deadlineMs: timing.dataTransferMs });
                step.log("info", `pg_dump of the source streamed into ${n.incomingDb} by pg_restore without error, ${how} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
                await neutralizeIfCopy();
                step.log("info", await verifyRestoredDatabase(docker, db, n.incomingDb));
                started = Date.now();
                const copied = await copyFileStore(live.layout, n, await erpUserOf(docker, image), step.signal);
                step.log(
                  "info",
                  `File store copied into ${basename(n.incomingDir)}: ${copied.files} files, ${copied.linked} hard-linked, ${copied.bytesCopied} bytes copied (${((Date.now() - started) / 1000).toFixed(1)} s)`,
                );
                return `Copied into ${n.incomingDb} and verified`;
              }
              await restoreDump(docker, db, n.incomingDb, createReadStream(join(dir, DB_DUMP_FILE)), timing.dataTransferMs);
              step.log("info", `pg_restore loaded the dump into ${n.incomingDb} without error`);
              await neutralizeIfCopy();
              step.log("info", await verifyRestoredDatabase(docker, db, n.incomingDb));
              if (withFiles) {
                await extractFileStore(docker, layout, image, n, join(dir, FILESTORE_FILE), deps, timing);
                step.log("info", `File store extracted into ${basename(n.incomingDir)}`);
              } else {
                step.log("warning", "The backup has no file store archive: the data dir will be left as it is");
              }
              return `Restored into ${n.incomingDb} and verified`;
            },
            starting_container: async (step) => {
              const container = need(erp);
              const n = need(names);
              if (wasRunning) {
                phase = "stopped";
                await docker.stopContainer(container.id, timing.stopGraceSeconds);
                step.log("info", `Stopped ERP container ${container.name} for the swap`);
              }
              writeRestoreJournal(layout, n.id, "swapping");
              phase = "swapped";
              await swapIn(docker, need(db), layout, n, withFiles);
              step.log(
                "info",
                `Swapped: ${n.incomingDb} is now "${ERP_DB_NAME}", the previous database is kept as ${n.previousDb}` +
                  (withFiles ? `; the file store likewise (previous: ${basename(n.previousDir)})` : ""),
              );
              await docker.startContainer(container.id);
              hostPort = await hostPortOf(docker, container.id);
              step.log("info", `Started ERP container ${container.name}`);
              return `ERP container running; port 8069 on 127.0.0.1:${hostPort ?? "?"}`;
            },
            health_check: async (step) => {
              const container = need(erp);
              const outcome =
                hostPort === null
                  ? { healthy: false as const, reason: "port 8069 is not published" }
                  : await waitForHealth({
                      hostPort,
                      timeoutMs: timing.healthTimeoutMs,
                      intervalMs: timing.healthIntervalMs,
                      signal: step.signal,
                      clock: deps.clock,
                      stoppedReason: stoppedReason(docker, container.id),
                    });
              if (!outcome.healthy) {
                const logs = await docker.containerLogs(container.id, 10).catch(() => "");
                step.log("error", `The ERP is not healthy on the restored database: ${outcome.reason}${logs ? `; its last log lines:\n${logs.trim()}` : ""}`);
                await rollBack(step.log);
                throw new CommandError(
                  "restore_unhealthy",
                  `the ERP was not healthy on the restored database (${outcome.reason}): ${ROLLED_BACK}`,
                );
              }
              writeRestoreJournal(layout, need(names).id, "committed");
              phase = "committed";
              step.log("info", `GET ${HEALTH_PATH} answered 200 (attempt ${outcome.attempts})`);
              return "ERP healthy";
            },
            completed: async (step) => {
              const n = need(names);
              try {
                await dropPrevious(docker, need(db), n);
                await clearRestoreJournal(layout);
                step.log("info", `Previous database dropped (${n.previousDb})${withFiles ? " and previous file store removed" : ""}`);
              } catch (error) {
                // The restore stands; the journal says "committed", so the next operation finishes this.
                step.log("warning", `Could not drop the previous database yet (${String(error)}): the next operation will`);
              }
              step.log("info", live === null ? `Restore of backup ${params.backup_id} finished` : `Copy of environment ${live.layout.environmentId} finished`);
              return "Done";
            },
          },
          timing.steps.restore,
        );
      } catch (error) {
        throw await undo(error);
      } finally {
        // A fetched backup counts among the environment's local ones: the newest few stay.
        if (fetched) await pruneStoredBackups(layout.backupsDir, deps.backupsKeptLocally ?? DEFAULT_BACKUPS_KEPT_LOCALLY).catch(() => undefined);
      }

      return {
        backup_id: params.backup_id,
        restored_at: deps.clock.now().toISOString(),
        container_id: need<ErpContainerRef>(erp).id,
        host_port: hostPort,
        healthy: true,
      };
    });
}

/** Extracts the file store archive (a tar.gz of "odoo/...", read from /var/lib/odoo) into the new data dir. */
async function extractFileStore(
  docker: DockerClient,
  layout: EnvironmentLayout,
  image: string,
  names: RestoreNames,
  archive: string,
  deps: ExecutorDeps,
  timing: ExecutorTiming,
): Promise<void> {
  await writeIntoIncomingDataDir(docker, layout, image, names, deps.extraLabels, async (helper) => {
    const tar = createGunzip();
    const feeding = pipeline(createReadStream(archive), tar);
    await Promise.all([docker.writeArchive(helper, "/var/lib", tar, timing.dataTransferMs), feeding]);
  });
}

/** The image the ERP container runs: the new data dir's helper is made from it. */
async function erpImage(docker: DockerClient, erp: ErpContainerRef): Promise<string> {
  const image = (await docker.inspectContainer(erp.id))?.image;
  if (image === undefined) throw new CommandError("not_deployed", `the ERP container ${erp.name} vanished`);
  return image;
}
