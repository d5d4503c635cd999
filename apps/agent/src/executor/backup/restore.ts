// restore: checks every file of the backup against its manifest first (a corrupted backup
// is refused before anything is touched), stops the ERP, replaces the database with the
// dump (one transaction), puts the file store back, starts the ERP and checks its health.
import { createReadStream } from "node:fs";
import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { DB_DUMP_FILE, FILESTORE_FILE, verifyBackup, type BackupManifest } from "./backup-files.ts";
import { checkHealth } from "../environment/health-check.ts";
import { backupDir, environmentLayout, type EnvironmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf, requireErpContainer, type ErpContainerRef } from "../environment/erp-container.ts";
import { timingOf, type ExecutorDeps } from "../runner/executor-deps.ts";
import type { CommandHandler } from "../runner/handler-types.ts";
import { replaceDatabase, runningPostgres } from "../environment/postgres.ts";
import { runSteps } from "../runner/step-runner.ts";

export function createRestoreHandler(deps: ExecutorDeps): CommandHandler<"restore"> {
  const timing = timingOf(deps);

  return (params, ctx) =>
    deps.locks.withLock(params.environment_id, "restore", async () => {
      const { docker } = ctx;
      const layout = environmentLayout(deps.stateDir, params.environment_id);
      const dir = backupDir(layout, params.backup_id);
      let manifest: BackupManifest | null = null;
      let erp: ErpContainerRef | null = null;
      let hostPort: number | null = null;
      let healthy = false;
      const need = <T>(value: T | null): T => {
        if (value === null) throw new Error("a step ran before the step that prepares its input");
        return value;
      };

      await runSteps(
        "restore",
        ctx,
        {
          initializing: async (step) => {
            manifest = await verifyBackup(dir, params.backup_id);
            step.log("info", `Backup ${params.backup_id} of ${manifest.created_at}: every file matches its checksum`);
            erp = await requireErpContainer(docker, layout);
            return "Backup verified";
          },
          connecting: async () => {
            const version = await docker.version();
            return `Docker ${version.version} reachable`;
          },
          initializing_database: async (step) => {
            const container = need(erp);
            await docker.stopContainer(container.id, timing.stopGraceSeconds);
            step.log("info", `Stopped ERP container ${container.name} for the restore`);
            const db = await runningPostgres(docker, layout, step, { readyTimeoutMs: timing.dbReadyTimeoutMs, clock: deps.clock });
            await replaceDatabase(docker, db, createReadStream(join(dir, DB_DUMP_FILE)), timing.dataTransferMs);
            step.log("info", "Database dropped, recreated and restored from the dump");
            return "Database restored";
          },
          starting_container: async (step) => {
            const container = need(erp);
            if (need(manifest).files.some((f) => f.name === FILESTORE_FILE)) {
              await restoreDataDir(layout, dir, container.id, ctx.docker, timing.dataTransferMs);
              step.log("info", "File store restored");
            } else {
              step.log("warning", "The backup has no file store archive: the data dir was left as it is");
            }
            await docker.startContainer(container.id);
            hostPort = await hostPortOf(docker, container.id);
            step.log("info", `Started ERP container ${container.name}`);
            return `ERP container running; port 8069 on 127.0.0.1:${hostPort ?? "?"}`;
          },
          health_check: async (step) => {
            healthy = await checkHealth(docker, need(erp).id, hostPort, step, deps.clock, timing);
            return healthy ? "ERP healthy" : "ERP not healthy (non-fatal)";
          },
          completed: async (step) => {
            step.log("info", `Restore of backup ${params.backup_id} finished`);
            return "Done";
          },
        },
        timing.steps.restore,
      );

      return {
        backup_id: params.backup_id,
        restored_at: deps.clock.now().toISOString(),
        container_id: need<ErpContainerRef>(erp).id,
        host_port: hostPort,
        healthy,
      };
    });
}

/**
 * Replaces the data dir's content with the archive, extracted by Docker into the (stopped)
 * ERP container so owners are kept. The old content is set aside first and comes back if
 * the extraction fails.
 */
async function restoreDataDir(
  layout: EnvironmentLayout,
  dir: string,
  containerId: string,
  docker: Parameters<CommandHandler<"restore">>[1]["docker"],
  deadlineMs: number,
): Promise<void> {
  const aside = join(layout.dir, `data-before-restore-${Date.now()}`);
  await mkdir(aside, { mode: 0o700 });
  const entries = await readdir(layout.dataDir);
  for (const entry of entries) await rename(join(layout.dataDir, entry), join(aside, entry));
  try {
    // The archive holds "odoo/..." (it was read from /var/lib/odoo), so it goes into /var/lib.
    const tar = createGunzip();
    const feeding = pipeline(createReadStream(join(dir, FILESTORE_FILE)), tar);
    await Promise.all([docker.writeArchive(containerId, "/var/lib", tar, deadlineMs), feeding]);
  } catch (error) {
    for (const entry of await readdir(layout.dataDir)) await rm(join(layout.dataDir, entry), { recursive: true, force: true });
    for (const entry of entries) await rename(join(aside, entry), join(layout.dataDir, entry));
    await rm(aside, { recursive: true, force: true });
    throw error;
  }
  await rm(aside, { recursive: true, force: true });
}
