// A restore that cannot lose the ERP's database: the dump goes into a NEW database and a
// new file store folder beside the live ones, which are swapped in by renames once the
// copy is loaded and verified, and swapped back if the ERP is not healthy on it.
//
// Names (a restore's id is time-ordered: lowercase base36 of the time, then random hex):
//   database   odoo                 the live one, always present
//              odoo_restore_<id>    being loaded; never served (dropped when abandoned)
//              odoo_previous_<id>   the live one before the swap, kept until the ERP is healthy
//   file store data, data-restore-<id>, data-previous-<id> (beside each other in the environment's dir)
//   journal    restore-state.json   {restore_id, phase} in the environment's dir
//
// The order, and what a crash at each point leaves:
//   1. load odoo_restore_<id> and data-restore-<id>; verify  crash: leftovers, live untouched
//   2. stop the ERP; write the journal, phase "swapping"      crash: ERP stopped, odoo intact
//   3. rename both databases in ONE transaction               so "odoo" always exists
//   4. data -> data-previous-<id>, data-restore-<id> -> data
//   5. start the ERP, health check
//   6a healthy: journal phase "committed", drop odoo_previous_<id> and data-previous-<id>, delete the journal
//   6b unhealthy: stop the ERP, swap both back, drop what was restored, delete the journal
//
// Recovery (recoverInterruptedRestore, run whenever the environment's PostgreSQL is made
// ready: by deploy, redeploy, backup, restore, start and restart): a journal in phase
// "swapping" is rolled back as in 6b (the restore never reported success); in phase
// "committed" it is finished as in 6a. Leftover odoo_restore_* databases, their loader roles
// (berth_loader_*, restore-role.ts) and data-restore-* folders never served and are removed. Without a journal, a missing "odoo"
// next to an odoo_previous_* gets the newest of those renamed back (likewise "data"); an
// odoo_previous_* beside a live "odoo" is then left alone with a warning: Berth does not
// drop a database it cannot account for.
import { randomBytes } from "node:crypto";
import { readdir, readFile, rename, rm, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import type { DockerClient } from "../../docker/docker-client.ts";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import { ERP_DB_NAME, ERP_DB_USER, type EnvironmentLayout } from "./environment-layout.ts";
import { CommandError } from "../runner/handler-types.ts";
import { psql } from "./psql.ts";
import { runLoader } from "./loader-container.ts";
import { dropLeftoverLoaders, withLoaderRole } from "./restore-role.ts";
import type { StepScope } from "../runner/step-runner.ts";

type Log = StepScope["log"];

export const RESTORE_DB_PREFIX = `${ERP_DB_NAME}_restore_`;
export const PREVIOUS_DB_PREFIX = `${ERP_DB_NAME}_previous_`;
const RESTORE_DIR_PREFIX = "data-restore-";
const PREVIOUS_DIR_PREFIX = "data-previous-";
const JOURNAL_FILE = "restore-state.json";
const ID = /^[a-z0-9]{1,32}$/;

export interface RestoreNames {
  id: string;
  /** The database being loaded. */
  incomingDb: string;
  /** The name the live database gets at the swap. */
  previousDb: string;
  /** The folder the file store is extracted into. */
  incomingDir: string;
  /** The name the live data dir gets at the swap. */
  previousDir: string;
}

/** A new restore's names; ids sort by time (base36 of the ms clock, fixed width until 2059). */
export function newRestoreNames(layout: EnvironmentLayout, now: Date): RestoreNames {
  return restoreNames(layout, `${now.getTime().toString(36)}${randomBytes(2).toString("hex")}`);
}

export function restoreNames(layout: EnvironmentLayout, id: string): RestoreNames {
  if (!ID.test(id)) throw new Error(`invalid restore id "${id}"`);
  return {
    id,
    incomingDb: `${RESTORE_DB_PREFIX}${id}`,
    previousDb: `${PREVIOUS_DB_PREFIX}${id}`,
    incomingDir: join(layout.dir, `${RESTORE_DIR_PREFIX}${id}`),
    previousDir: join(layout.dir, `${PREVIOUS_DIR_PREFIX}${id}`),
  };
}

const OURS = new RegExp(`^${ERP_DB_NAME}_(restore|previous)_[a-z0-9]{1,32}$`);
/** Pre-deploy snapshots (pre-deploy-snapshot.ts): template copies, never served. */
export const SNAPSHOT_DB_PREFIX = `${ERP_DB_NAME}_predeploy_`;
const SNAPSHOT = new RegExp(`^${SNAPSHOT_DB_PREFIX}[a-f0-9]{32}$`);

/** Only names this module makes (or "odoo") are ever put into SQL. */
function ident(name: string): string {
  if (name !== ERP_DB_NAME && !OURS.test(name) && !SNAPSHOT.test(name)) {
    throw new Error(`refusing to use "${name}" as a database name`);
  }
  return `"${name}"`;
}

export async function listDatabases(docker: DockerClient, dbContainerId: string): Promise<string[]> {
  return psql(docker, dbContainerId, "SELECT datname FROM pg_database ORDER BY datname");
}

/**
 * A new, empty database for a restore, made as Odoo makes its own (odoo/service/db.py,
 * _create_empty_database): UTF-8, `LC_COLLATE 'C'`, from template0 (so nothing a customer
 * put in template1 comes along), so a restored ERP sorts and compares text as one Odoo made.
 * The extensions the source had (pg_trgm, unaccent) come with its dump.
 */
export async function createDatabase(docker: DockerClient, dbContainerId: string, name: string): Promise<void> {
  await psql(docker, dbContainerId, `CREATE DATABASE ${ident(name)} OWNER ${ERP_DB_USER} ${ODOO_DATABASE_CLAUSES}`, { code: "restore_failed" });
}

/** The clauses of Odoo's CREATE DATABASE (odoo/service/db.py, 16.0 to 19.0). */
export const ODOO_DATABASE_CLAUSES = "ENCODING 'unicode' LC_COLLATE 'C' TEMPLATE template0";

/**
 * A copy of `from` as `to` at the speed of the disk (CREATE DATABASE ... TEMPLATE): `from`
 * must have no other connection meanwhile, so its own are closed first (stop the ERP before).
 */
/**
 * How CREATE DATABASE ... TEMPLATE copies: "file_copy" (a checkpoint, then the files at disk
 * speed; the only way before PostgreSQL 15) or "wal_log" (15's default: every block also
 * written to the WAL, about twice the writes; meant for small templates). "auto": file_copy.
 */
export type CopyStrategy = "auto" | "file_copy" | "wal_log";

export async function copyDatabase(
  docker: DockerClient,
  dbContainerId: string,
  from: string,
  to: string,
  deadlineMs: number,
  strategy: CopyStrategy = "auto",
): Promise<void> {
  // STRATEGY exists from PostgreSQL 15; before it, every copy is a file copy.
  const [version] = await psql(docker, dbContainerId, "SHOW server_version_num");
  const clause = Number(version) >= 150000 ? ` STRATEGY ${strategy === "wal_log" ? "WAL_LOG" : "FILE_COPY"}` : "";
  await retryWhileInUse(async () => {
    await terminateConnections(docker, dbContainerId, [from]);
    await psql(docker, dbContainerId, `CREATE DATABASE ${ident(to)} TEMPLATE ${ident(from)} OWNER ${ERP_DB_USER}${clause}`, {
      deadlineMs,
      code: "snapshot_failed",
    });
  });
}

/** Drops it, closing its connections first (a pg_restore still loading it, say); gone already is success. */
export async function dropDatabase(docker: DockerClient, dbContainerId: string, name: string): Promise<void> {
  // Not DROP ... WITH (FORCE): that needs PostgreSQL 13, and environments may run older ones.
  await retryWhileInUse(async () => {
    await terminateConnections(docker, dbContainerId, [name]);
    await psql(docker, dbContainerId, `DROP DATABASE IF EXISTS ${ident(name)}`);
  });
}

async function terminateConnections(docker: DockerClient, dbContainerId: string, names: string[]): Promise<void> {
  const list = names.map((n) => `'${ident(n).slice(1, -1)}'`).join(", ");
  await psql(docker, dbContainerId, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname IN (${list}) AND pid <> pg_backend_pid()`);
}

/** A client may reconnect between closing its connections and the statement that needs none. */
async function retryWhileInUse(work: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await work();
      return;
    } catch (error) {
      if (attempt >= 5 || !String((error as Error).message).includes("is being accessed by other users")) throw error;
      await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
    }
  }
}

/**
 * pg_restore of a custom-format dump into the restore database `name`, in one transaction: all
 * of it or an error. As plain dumps (sql-dump.ts), it runs as nobody with no network
 * (loader-container.ts) and connects as the restore's loader role, no superuser: what the
 * dump's SQL may do is what the database's owner may.
 */
export async function restoreDump(
  docker: DockerClient,
  dbContainerId: string,
  name: string,
  dump: Readable,
  deadlineMs: number,
): Promise<void> {
  ident(name);
  await withLoaderRole(docker, dbContainerId, name, async (role) => {
    const result = await runLoader(docker, dbContainerId, ["pg_restore", "-U", role, "--no-owner", "--single-transaction", "--exit-on-error", "--dbname", name], {
      deadlineMs,
      stdin: dump,
    });
    if (result.exitCode !== 0) {
      throw new CommandError("restore_failed", `pg_restore failed (exit code ${result.exitCode}): ${result.stderr.trim()}`);
    }
  });
}

/**
 * Renames `renames` ([from, to] pairs) in ONE transaction, after closing every connection to
 * the databases involved; retried a few times if a client reconnects in between.
 */
export async function renameDatabases(docker: DockerClient, dbContainerId: string, renames: [string, string][]): Promise<void> {
  const sql = `BEGIN; ${renames.map(([from, to]) => `ALTER DATABASE ${ident(from)} RENAME TO ${ident(to)};`).join(" ")} COMMIT;`;
  await retryWhileInUse(async () => {
    await terminateConnections(docker, dbContainerId, [...new Set(renames.flat())]);
    await psql(docker, dbContainerId, sql);
  });
}

// ---- the journal ----

export type RestorePhase = "swapping" | "committed";

interface Journal {
  restore_id: string;
  phase: RestorePhase;
}

export function writeRestoreJournal(layout: EnvironmentLayout, id: string, phase: RestorePhase): void {
  writeFileAtomic(join(layout.dir, JOURNAL_FILE), `${JSON.stringify({ restore_id: id, phase } satisfies Journal)}\n`, SECRET_FILE_MODE);
}

export async function clearRestoreJournal(layout: EnvironmentLayout): Promise<void> {
  await unlink(join(layout.dir, JOURNAL_FILE)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
}

async function readJournal(layout: EnvironmentLayout): Promise<Journal | null> {
  let text: string;
  try {
    text = await readFile(join(layout.dir, JOURNAL_FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
  const parsed = JSON.parse(text) as Partial<Journal>;
  if (typeof parsed.restore_id !== "string" || !ID.test(parsed.restore_id) || (parsed.phase !== "swapping" && parsed.phase !== "committed")) {
    throw new CommandError("restore_state_invalid", `${join(layout.dir, JOURNAL_FILE)} is not a restore journal: ${text.slice(0, 200)}`);
  }
  return { restore_id: parsed.restore_id, phase: parsed.phase };
}

// ---- swapping ----

export async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Puts the incoming database and folder live, the live ones aside (the ERP must be stopped). */
export async function swapIn(docker: DockerClient, dbContainerId: string, layout: EnvironmentLayout, n: RestoreNames, withFiles: boolean): Promise<void> {
  await renameDatabases(docker, dbContainerId, [
    [ERP_DB_NAME, n.previousDb],
    [n.incomingDb, ERP_DB_NAME],
  ]);
  if (withFiles) {
    await rename(layout.dataDir, n.previousDir);
    await rename(n.incomingDir, layout.dataDir);
  }
}

/**
 * Undoes swapIn from wherever it got to (the ERP must be stopped): the previous database and
 * folder are live again, what was restored is dropped. Safe to run twice.
 */
export async function swapBack(docker: DockerClient, dbContainerId: string, layout: EnvironmentLayout, n: RestoreNames, log: Log): Promise<void> {
  const dbs = await listDatabases(docker, dbContainerId);
  if (dbs.includes(n.previousDb)) {
    await renameDatabases(
      docker,
      dbContainerId,
      dbs.includes(ERP_DB_NAME) ? [[ERP_DB_NAME, n.incomingDb], [n.previousDb, ERP_DB_NAME]] : [[n.previousDb, ERP_DB_NAME]],
    );
    log("warning", `Swapped back: database ${n.previousDb} is "${ERP_DB_NAME}" again`);
  }
  if (await exists(n.previousDir)) {
    if (await exists(layout.dataDir)) await rename(layout.dataDir, n.incomingDir);
    await rename(n.previousDir, layout.dataDir);
    log("warning", "Swapped back: the file store is the one from before the restore");
  }
  await discardIncoming(docker, dbContainerId, n);
}

/** Drops the database and folder of a restore that never became (or no longer is) live. */
export async function discardIncoming(docker: DockerClient, dbContainerId: string, n: RestoreNames): Promise<void> {
  await dropDatabase(docker, dbContainerId, n.incomingDb);
  await rm(n.incomingDir, { recursive: true, force: true });
}

/** After a healthy start: what was live before the restore is dropped. */
export async function dropPrevious(docker: DockerClient, dbContainerId: string, n: RestoreNames): Promise<void> {
  await dropDatabase(docker, dbContainerId, n.previousDb);
  await rm(n.previousDir, { recursive: true, force: true });
}

// ---- recovery ----

export interface RecoveryHooks {
  /** Stops the ERP if it runs; returns how to put it back as it was. */
  stopErp(): Promise<() => Promise<void>>;
}

/**
 * Brings an environment whose last restore was interrupted (an agent crash, a lost
 * server) back to one consistent state; see the header for the rules. Does nothing, quickly,
 * when there is nothing to recover.
 */
export async function recoverInterruptedRestore(
  docker: DockerClient,
  dbContainerId: string,
  layout: EnvironmentLayout,
  log: Log,
  hooks: RecoveryHooks,
): Promise<void> {
  const journal = await readJournal(layout);
  let dbs = await listDatabases(docker, dbContainerId);
  const entries = await readdir(layout.dir).catch(() => [] as string[]);

  if (journal !== null) {
    const n = restoreNames(layout, journal.restore_id);
    if (journal.phase === "committed") {
      await dropPrevious(docker, dbContainerId, n);
      log("warning", `Finished the interrupted restore ${n.id}: it had passed its health check; previous database dropped`);
    } else if (dbs.includes(n.previousDb) || (await exists(n.previousDir))) {
      const restart = await hooks.stopErp();
      await swapBack(docker, dbContainerId, layout, n, log);
      await restart();
      log("warning", `Rolled back the interrupted restore ${n.id} to the database as it was before the restore`);
    } else {
      await discardIncoming(docker, dbContainerId, n);
      log("warning", `The interrupted restore ${n.id} had not swapped anything: its copy was dropped`);
    }
    await clearRestoreJournal(layout);
    dbs = await listDatabases(docker, dbContainerId);
  } else {
    const previousDbs = dbs.filter((d) => d.startsWith(PREVIOUS_DB_PREFIX) && OURS.test(d)).sort();
    const newestDb = previousDbs.at(-1);
    if (!dbs.includes(ERP_DB_NAME) && newestDb !== undefined) {
      await renameDatabases(docker, dbContainerId, [[newestDb, ERP_DB_NAME]]);
      log("warning", `Database "${ERP_DB_NAME}" was missing: renamed ${newestDb} back`);
      dbs = await listDatabases(docker, dbContainerId);
    }
    const previousDirs = entries.filter((e) => e.startsWith(PREVIOUS_DIR_PREFIX)).sort();
    const newestDir = previousDirs.at(-1);
    if (newestDir !== undefined && !(await exists(layout.dataDir))) {
      await rename(join(layout.dir, newestDir), layout.dataDir);
      log("warning", `The data dir was missing: renamed ${newestDir} back`);
    }
    for (const d of dbs.filter((d) => d.startsWith(PREVIOUS_DB_PREFIX))) {
      log("warning", `Database ${d} is left from an earlier restore; kept (drop it by hand once it is not needed)`);
    }
  }
  // Copies being loaded when a restore stopped: never live, nothing to keep.
  for (const d of dbs.filter((d) => d.startsWith(RESTORE_DB_PREFIX) && OURS.test(d))) {
    await dropDatabase(docker, dbContainerId, d);
    log("info", `Dropped ${d}, left by an interrupted restore`);
  }
  // Their loader roles (restore-role.ts), with whatever they still own given back to the ERP's user.
  for (const role of await dropLeftoverLoaders(docker, dbContainerId, await listDatabases(docker, dbContainerId))) {
    log("info", `Dropped the role ${role}, left by an interrupted restore`);
  }
  for (const e of (await readdir(layout.dir).catch(() => [] as string[])).filter((e) => e.startsWith(RESTORE_DIR_PREFIX))) {
    await rm(join(layout.dir, e), { recursive: true, force: true });
    log("info", `Removed ${e}, left by an interrupted restore`);
  }
}
