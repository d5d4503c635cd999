// A deploy that restores a migration's backup (DeployParams.archive, platform spec 4.3)
// instead of initialising a new database: the same restore as the restore command's
// (archive-restore.ts loads it into a NEW database and data dir; database-swap.ts swaps them
// in, keeps what was live as odoo_previous_<id> / data-previous-<id> and journals the swap so
// that a crash is recovered), placed in the deploy's starting_container, before the modules.
//
// The environment's ERP, when it serves (the control plane's force_restore), keeps serving
// while the copy is fetched, loaded, neutralised and verified; it stops only for the swap.
// What was live is dropped only once the deploy has succeeded (commit, in step completed). A
// failure before the swap drops the copy; one after it (any later step, cancel included)
// removes this deploy's ERP, swaps back, puts the previous code and odoo.conf back and starts
// the old ERP again: a failed restore loses nothing of the previous data.
//
// Each phase is reported as it begins by a log line whose data.migration_step is one of
// MIGRATION_RESTORE_PHASES, which the control plane maps onto a migration's steps.
import { readdir, rm, rmdir } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { DeployParams, MigrationRestorePhase } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { archiveHere, loadArchive, type DumpLoader } from "../backup/archive-restore.ts";
import type { ErpArchiveFormat } from "../backup/erp-archive.ts";
import { neutralizeCopy } from "../backup/neutralize.ts";
import { ROLLED_BACK } from "../backup/restore.ts";
import { verifyRestoredDatabase } from "../backup/restore-verification.ts";
import {
  clearRestoreJournal,
  createDatabase,
  discardIncoming,
  dropPrevious,
  listDatabases,
  newRestoreNames,
  swapBack,
  swapIn,
  writeRestoreJournal,
  type RestoreNames,
} from "../environment/database-swap.ts";
import { ERP_DB_NAME, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { findErpContainer, putBackPrevious } from "../environment/erp-container.ts";
import type { ExecutorDeps } from "../runner/executor-deps.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";
import type { PreviousErp } from "./previous-erp.ts";

type Archive = NonNullable<DeployParams["archive"]>;
type Log = StepScope["log"];

/** What the deploy's result says of the restore (result.migration_restore). */
export interface MigrationRestoreResult {
  migration_id: string;
  format: ErpArchiveFormat;
  /** The dump's name in the archive. */
  dump: string;
  /** File store files written. */
  files: number;
  neutralized: boolean;
  /** A database was live before (force_restore): it was replaced, and dropped once the deploy succeeded. */
  replaced_existing: boolean;
}

/** How far the restore got: what a failure has to undo. */
type Phase = "idle" | "loading" | "swapped" | "undone" | "committed";

export function createMigrationRestore(
  deps: Pick<ExecutorDeps, "controlPlaneUrl" | "clock" | "extraLabels"> & {
    docker: DockerClient;
    layout: EnvironmentLayout;
    /** The deploy's ERP image: the new data dir is written through a helper of it, and its own neutralize runs on a copy. */
    image: string;
    /** The environment's address (https://<domain>), a copy's web.base.url; null without a domain. */
    baseUrl: string | null;
    /** The environment's mail goes to the server's catcher (the deploy's catch_mail): a neutralised copy's mail servers are turned off. */
    catchMail: boolean;
    previous: PreviousErp;
    dataTransferMs: number;
    stopGraceSeconds: number;
  },
  archive: Archive,
) {
  const { docker, layout } = deps;
  let phase: Phase = "idle";
  let dbId: string | null = null;
  let names: RestoreNames | null = null;
  let path: string | null = null;
  let oldErpId: string | null = null;
  /** The old ERP, when this restore stopped it for the swap. */
  let stoppedForSwap: string | null = null;
  let replacedExisting = false;
  let read: { format: ErpArchiveFormat; dump: string; files: number; loader: DumpLoader } | null = null;

  const mark = (step: Pick<StepScope, "log">, migrationStep: MigrationRestorePhase, message: string, skipped = false) =>
    step.log("info", message, { migration_step: migrationStep, ...(skipped ? { skipped: true } : {}) });

  return {
    /**
     * Fetches, loads, neutralises (when asked) and verifies the copy, then swaps it in. `erpId`
     * is the ERP container that served before this deploy, if any.
     */
    async restore(step: StepScope, dbContainerId: string, erpId: string | null): Promise<void> {
      dbId = dbContainerId;
      oldErpId = erpId;
      mark(step, "downloading_backup", `Migration ${archive.migration_id}: getting its backup ${archive.file.name}`);
      path = await archiveHere({ deps, layout, backupId: archive.migration_id, archive, log: step.log, signal: step.signal });
      step.signal.throwIfAborted();

      const n = newRestoreNames(layout, deps.clock.now());
      names = n;
      phase = "loading";
      replacedExisting = (await listDatabases(docker, dbContainerId)).includes(ERP_DB_NAME);
      step.log(
        "info",
        `Restoring into a new database ${n.incomingDb}` +
          (replacedExisting ? `; the live database "${ERP_DB_NAME}" is not touched until the copy is verified, and the ERP keeps serving meanwhile` : ""),
      );
      await createDatabase(docker, dbContainerId, n.incomingDb);
      mark(step, "extracting_backup", `Reading ${archive.file.name}`);
      // The file store phase begins once the dump is loaded and a member comes (a zip lists
      // dump.sql first), or at once if members came before the dump (a tar may); an archive
      // found to hold none reports it skipped.
      let dumpLoaded = false;
      let filesSeen = 0;
      let fileStoreMarked = false;
      const markFileStore = (skipped: boolean) => {
        if (fileStoreMarked) return;
        fileStoreMarked = true;
        mark(step, "restoring_filestore", skipped ? "The backup has no file store: nothing to restore there" : "Restoring the file store", skipped);
      };
      read = await loadArchive({
        docker,
        dbContainerId,
        layout,
        image: deps.image,
        names: n,
        path,
        extraLabels: deps.extraLabels,
        deadlineMs: deps.dataTransferMs,
        progress: {
          dumpStarted: () => mark(step, "restoring_database", `Restoring the database from the backup into ${n.incomingDb}`),
          dumpLoaded: () => {
            dumpLoaded = true;
            if (filesSeen > 0) markFileStore(false);
          },
          fileStarted: () => {
            filesSeen++;
            if (dumpLoaded) markFileStore(false);
          },
        },
      });
      markFileStore(read.files === 0);
      step.log("info", `${read.loader} loaded ${read.dump} (${read.format}) into ${n.incomingDb} without error; ${read.files} file store files written into ${basename(n.incomingDir)}`);
      if (archive.neutralize === true) {
        await neutralizeCopy({
          docker,
          layout,
          dbContainerId,
          image: deps.image,
          database: n.incomingDb,
          baseUrl: deps.baseUrl,
          catchMail: deps.catchMail,
          extraLabels: deps.extraLabels,
          deadlineMs: deps.dataTransferMs,
          signal: step.signal,
          log: step.log,
        });
      }
      step.log("info", await verifyRestoredDatabase(docker, dbContainerId, n.incomingDb));
      step.signal.throwIfAborted();

      // A new environment has no live database yet: an empty one stands in, so the swap is
      // the same two renames the journal and the crash recovery know (it is dropped with the
      // previous data once the deploy succeeds).
      if (!replacedExisting) await createDatabase(docker, dbContainerId, ERP_DB_NAME);
      stoppedForSwap = await deps.previous.stopForSwap(step.log);
      writeRestoreJournal(layout, n.id, "swapping");
      phase = "swapped";
      await swapIn(docker, dbContainerId, layout, n, true);
      step.log(
        "info",
        `Swapped: ${n.incomingDb} is now "${ERP_DB_NAME}"; the previous database and file store are kept as ${n.previousDb} and ${basename(n.previousDir)} until the deploy succeeds`,
      );
    },

    /** A database this deploy restored: never initialised with -i base, no pre-deploy snapshot. */
    get restored(): boolean {
      return phase === "swapped";
    },

    /** The old ERP container must be kept (parked) by the switch: a swap back starts it again. */
    get keepsPreviousErp(): boolean {
      return phase === "swapped";
    },

    /** Previous data is at stake: an ERP not healthy on the restored database fails the deploy (and swaps back). */
    get replacesExisting(): boolean {
      return phase === "swapped" && replacedExisting;
    },

    /** Just before the ERP starts on the restored database. */
    markRestarting(step: Pick<StepScope, "log">): void {
      if (phase === "swapped") mark(step, "restarting_container", "Starting the ERP on the restored database");
    },

    /**
     * After a failure or cancel: drops the copy, or, after the swap, removes this deploy's
     * ERP, swaps back and starts the old ERP again. Returns the error to report.
     */
    async undo(error: unknown, log: Log): Promise<unknown> {
      if (names === null || dbId === null || phase === "idle" || phase === "undone" || phase === "committed") return error;
      const n = names;
      const db = dbId;
      const reason = error instanceof Error ? error.message : String(error);
      const code = error instanceof CommandError ? error.code : "deploy_failed";
      try {
        if (phase === "loading") {
          phase = "undone";
          await discardIncoming(docker, db, n);
          log("info", `Dropped ${n.incomingDb} and its file store folder; the live database was not touched`);
          return error;
        }
        // Swapped: nothing may run on either database while they are renamed.
        const current = await findErpContainer(docker, layout);
        if (current !== null && current.id !== oldErpId) await putBackPrevious(docker, layout, current.id, { log }, deps.stopGraceSeconds);
        else if (current !== null && current.state === "running") await docker.stopContainer(current.id, deps.stopGraceSeconds);
        await swapBack(docker, db, layout, n, log);
        await clearRestoreJournal(layout);
        phase = "undone";
        // All of the environment as it was, code and odoo.conf too: a retry that fails again
        // then still goes back to what served before this deploy, not to this deploy's code.
        await deps.previous.putBackCode(log);
        if (stoppedForSwap !== null) await deps.previous.resumeAfterSwapBack(stoppedForSwap, log);
        log("warning", `The deploy failed after the restored database was swapped in: ${ROLLED_BACK}`);
        return new CommandError(code, `${reason}: ${ROLLED_BACK}`);
      } catch (undoError) {
        const why = undoError instanceof Error ? undoError.message : String(undoError);
        log("error", `Could not undo the restore: ${why}`);
        return new CommandError(code, `${reason}; putting the previous database back failed too (${why}): the next deploy, restore or start finishes it`);
      }
    },

    /**
     * The deploy succeeded: what was live before is dropped, and the fetched backup (the
     * control plane keeps its copy). False when there was no swap to commit.
     */
    async commit(log: Log): Promise<boolean> {
      if (phase !== "swapped" || names === null || dbId === null) return false;
      const n = names;
      writeRestoreJournal(layout, n.id, "committed");
      phase = "committed";
      try {
        await dropPrevious(docker, dbId, n);
        await clearRestoreJournal(layout);
        log("info", `Previous database ${n.previousDb} and file store ${basename(n.previousDir)} dropped`);
      } catch (error) {
        // The restore stands; the journal says "committed", so the next operation finishes this.
        log("warning", `Could not drop the previous database yet (${String(error)}): the next operation will`);
      }
      if (path !== null) {
        await rm(path, { force: true });
        // The migration's folder in the backups, once empty.
        if ((await readdir(dirname(path)).catch(() => ["?"])).length === 0) await rmdir(dirname(path)).catch(() => undefined);
        log("info", `Removed the fetched backup ${archive.file.name} from this server (the control plane's store keeps it)`);
      }
      return true;
    },

    result(): MigrationRestoreResult | null {
      if (read === null) return null;
      return {
        migration_id: archive.migration_id,
        format: read.format,
        dump: read.dump,
        files: read.files,
        neutralized: archive.neutralize === true,
        replaced_existing: replacedExisting,
      };
    },
  };
}

export type MigrationRestore = ReturnType<typeof createMigrationRestore>;
