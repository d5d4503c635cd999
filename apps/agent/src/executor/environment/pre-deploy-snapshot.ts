// Pre-deploy snapshots: taken before a deploy installs or upgrades modules, the rollback
// target when the upgrade or the health check after it fails.
//
// What a snapshot is (measured on the stand-in, see the bench: a template copy of the
// database takes a fraction of a pg_dump -Fc, and restoring it is a rename, where a
// pg_restore takes about 1.6 times the dump):
//   database   odoo_predeploy_<id without dashes>: CREATE DATABASE ... TEMPLATE odoo, in
//              the environment's own PostgreSQL (never served, never connected to)
//   file store <backups>/<env>/<id>/filestore: a tree of hard links to the live file
//              store (Odoo names files by their SHA-1 and never rewrites one), so taking
//              it costs time per file, not per byte, and no extra disk
//   manifest   <backups>/<env>/<id>/manifest.json: kind "pre_deploy", when, which deploy,
//              the database's name and the modules before
// A template copy needs no other connection to "odoo": the ERP is stopped (gracefully, its
// requests in flight finish) for the copy and the file store links. The caller decides what
// follows a copy that succeeded (a deploy keeps the ERP stopped behind the proxy's
// maintenance page until the upgrade's outcome: a write made after the snapshot would be
// lost by a rollback to it); after a failed copy the ERP is started again.
//
// A rollback goes through database-swap.ts, as a restore does: a data dir with the
// snapshot's file store (hard links again) is built as data-restore-<rid>; then the
// snapshot database becomes "odoo" and the failed one odoo_previous_<rid> in one
// transaction, the data dirs are swapped, and the restore journal says "committed", so the
// failed database and data dir are dropped once the ERP serves (or by recovery after a
// crash). The snapshot is consumed: a copy of it would cost as much as taking it, at the
// moment the ERP is down, and would only duplicate what is live.
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import { lstat, mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { DockerClient } from "../../docker/docker-client.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { STATE_DIR_MODE } from "../../state/state-dir.ts";
import { ERP_DB_NAME, backupDir, type EnvironmentLayout } from "./environment-layout.ts";
import {
  SNAPSHOT_DB_PREFIX,
  clearRestoreJournal,
  copyDatabase,
  dropDatabase,
  dropPrevious,
  exists,
  listDatabases,
  newRestoreNames,
  swapIn,
  writeRestoreJournal,
} from "./database-swap.ts";
import { psql } from "./psql.ts";
import { CommandError } from "../runner/handler-types.ts";
import type { StepScope } from "../runner/step-runner.ts";

const execFileAsync = promisify(execFile);
type Log = StepScope["log"];

export const DEFAULT_PRE_DEPLOY_RETENTION = 3;

export interface PreDeploySnapshot {
  backup_id: string;
  kind: "pre_deploy";
  created_at: string;
  deployment_id: string;
  /** The template database holding it. */
  database: string;
  /** Its folder (manifest and file store). */
  path: string;
  /** Database size plus the file store's bytes (shared with the live file store by hard links). */
  size_bytes: number;
  modules: Record<string, string | null>;
}

export function snapshotDbName(id: string): string {
  return `${SNAPSHOT_DB_PREFIX}${id.replace(/-/g, "")}`;
}

/** Where the ERP keeps the database's file store inside the data dir. */
export function fileStoreOf(dataDir: string): string {
  return join(dataDir, "filestore", ERP_DB_NAME);
}

/** Hard links where possible (same file system), a plain copy otherwise. */
export async function linkTree(from: string, to: string, deadlineMs: number): Promise<void> {
  try {
    await execFileAsync("cp", ["-al", "--", from, to], { timeout: deadlineMs });
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? "");
    if (!/cross-device|Invalid cross-device link|Operation not permitted/i.test(stderr)) {
      throw new CommandError("snapshot_failed", `copy of ${from} failed: ${stderr.trim() || String(error)}`);
    }
    await rm(to, { recursive: true, force: true });
    await execFileAsync("cp", ["-a", "--", from, to], { timeout: deadlineMs });
  }
}

async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await treeBytes(path);
    else if (entry.isFile()) total += (await lstat(path)).size;
  }
  return total;
}

export interface SnapshotHooks {
  /** Stops the ERP if it runs; returns what to do once the copy is done (`copied`) or failed. */
  stopErp(): Promise<(copied: boolean) => Promise<void>>;
}

/** Takes a snapshot of the live database and file store; the ERP is stopped for the copy. */
export async function takeSnapshot(
  docker: DockerClient,
  dbContainerId: string,
  layout: EnvironmentLayout,
  options: { deploymentId: string; now: Date; modules: Record<string, string | null>; deadlineMs: number; log: Log; hooks: SnapshotHooks },
): Promise<PreDeploySnapshot> {
  const id = randomUUID();
  const dir = backupDir(layout, id);
  const database = snapshotDbName(id);
  await mkdir(dir, { recursive: true, mode: STATE_DIR_MODE });
  const started = Date.now();
  try {
    const copied = await options.hooks.stopErp();
    let ok = false;
    try {
      await copyDatabase(docker, dbContainerId, ERP_DB_NAME, database, options.deadlineMs);
      const live = fileStoreOf(layout.dataDir);
      if (await exists(live)) await linkTree(live, join(dir, "filestore"), options.deadlineMs);
      else await mkdir(join(dir, "filestore"), { mode: 0o750 });
      ok = true;
    } finally {
      await copied(ok);
    }
  } catch (error) {
    await dropDatabase(docker, dbContainerId, database).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const [dbBytes] = await psql(docker, dbContainerId, `SELECT pg_database_size('${database}')`);
  const snapshot: PreDeploySnapshot = {
    backup_id: id,
    kind: "pre_deploy",
    created_at: options.now.toISOString(),
    deployment_id: options.deploymentId,
    database,
    path: dir,
    size_bytes: Number(dbBytes ?? 0) + (await treeBytes(join(dir, "filestore"))),
    modules: options.modules,
  };
  writeFileAtomic(join(dir, "manifest.json"), `${JSON.stringify(snapshot, null, 2)}\n`, 0o600);
  options.log("info", `Pre-deploy snapshot ${id} taken in ${((Date.now() - started) / 1000).toFixed(1)} s (database ${database}, file store hard links)`, {
    backup_id: id,
    size_bytes: snapshot.size_bytes,
  });
  return snapshot;
}

/** The environment's pre-deploy snapshots, newest first. */
export async function listSnapshots(layout: EnvironmentLayout): Promise<PreDeploySnapshot[]> {
  const entries = await readdir(layout.backupsDir).catch(() => [] as string[]);
  const found: PreDeploySnapshot[] = [];
  for (const entry of entries) {
    const text = await readFile(join(layout.backupsDir, entry, "manifest.json"), "utf8").catch(() => null);
    if (text === null) continue;
    try {
      const manifest = JSON.parse(text) as Partial<PreDeploySnapshot>;
      if (manifest.kind === "pre_deploy" && manifest.backup_id === entry) found.push(manifest as PreDeploySnapshot);
    } catch {
      // Not a snapshot's manifest.
    }
  }
  return found.sort((a, b) => b.created_at.localeCompare(a.created_at));
}

/** Keeps the newest `keep` snapshots; drops the others' databases and folders. */
export async function pruneSnapshots(
  docker: DockerClient,
  dbContainerId: string,
  layout: EnvironmentLayout,
  keep: number,
  log: Log,
): Promise<PreDeploySnapshot[]> {
  const all = await listSnapshots(layout);
  for (const old of all.slice(keep)) {
    await dropDatabase(docker, dbContainerId, snapshotDbName(old.backup_id));
    await rm(join(layout.backupsDir, old.backup_id), { recursive: true, force: true });
    log("info", `Pre-deploy snapshot ${old.backup_id} of ${old.created_at} removed (keeping the last ${keep})`);
  }
  // A snapshot database whose folder is gone (interrupted prune): nothing refers to it.
  const kept = new Set(all.slice(0, keep).map((s) => snapshotDbName(s.backup_id)));
  for (const db of await listDatabases(docker, dbContainerId)) {
    if (db.startsWith(SNAPSHOT_DB_PREFIX) && !kept.has(db)) {
      await dropDatabase(docker, dbContainerId, db);
      log("info", `Dropped ${db}: a snapshot database without its folder`);
    }
  }
  return all.slice(0, keep);
}

/**
 * Puts the snapshot's database and file store live (the ERP must be stopped): the snapshot
 * database itself is renamed to "odoo" in the same transaction that renames the failed one
 * aside, so the rollback takes the same second or two at any size; the snapshot is consumed
 * (its folder is removed: it is what is live now). The rest of the data dir (sessions, ...)
 * is kept as it is. Returns what is left to do once the ERP serves again: dropping the
 * failed database and data dir.
 */
export async function rollbackToSnapshot(
  docker: DockerClient,
  dbContainerId: string,
  layout: EnvironmentLayout,
  snapshot: PreDeploySnapshot,
  options: { now: Date; deadlineMs: number; log: Log },
): Promise<() => Promise<void>> {
  const n = { ...newRestoreNames(layout, options.now), incomingDb: snapshot.database };
  try {
    await mkdir(n.incomingDir, { mode: 0o750 });
    // Everything of the data dir but the file store, then the snapshot's file store.
    for (const entry of await readdir(layout.dataDir).catch(() => [] as string[])) {
      if (entry === "filestore") continue;
      await linkTree(join(layout.dataDir, entry), join(n.incomingDir, entry), options.deadlineMs);
    }
    const storeParent = join(n.incomingDir, "filestore");
    await mkdir(storeParent, { recursive: true, mode: 0o750 });
    for (const entry of await readdir(join(layout.dataDir, "filestore")).catch(() => [] as string[])) {
      if (entry !== ERP_DB_NAME) await linkTree(join(layout.dataDir, "filestore", entry), join(storeParent, entry), options.deadlineMs);
    }
    await linkTree(join(snapshot.path, "filestore"), fileStoreOf(n.incomingDir), options.deadlineMs);
    const owner = await lstat(layout.dataDir).catch(() => null);
    if (owner !== null) {
      await execFileAsync("chown", [`${owner.uid}:${owner.gid}`, n.incomingDir, storeParent]).catch(() => undefined);
    }
  } catch (error) {
    await rm(n.incomingDir, { recursive: true, force: true });
    throw error;
  }
  // No "swapping" journal: recovery would swap back and drop the incoming database, which
  // is the snapshot. The database renames are one transaction; a crash before the journal
  // below leaves odoo_previous_<id> beside "odoo", which recovery keeps (with a warning).
  await swapIn(docker, dbContainerId, layout, n, true);
  writeRestoreJournal(layout, n.id, "committed");
  await rm(snapshot.path, { recursive: true, force: true });
  options.log("warning", `Database and file store rolled back to pre-deploy snapshot ${snapshot.backup_id} of ${snapshot.created_at} (the snapshot is now the live database)`);
  return async () => {
    await dropPrevious(docker, dbContainerId, n);
    await clearRestoreJournal(layout);
  };
}
