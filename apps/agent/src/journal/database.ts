// Opens the journal's SQLite file with the permissions and pragmas durability depends on.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import Database from "better-sqlite3";
import { sqliteNativeBinding } from "../native/sqlite-addon.ts";

const BUSY_TIMEOUT_MS = 5_000;
// A checkpoint truncates the WAL back to this size, so a burst of events does not leave
// a large -wal file behind for the life of the process.
const WAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024;

export function openDatabase(path: string): Database.Database {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Create the file ourselves so it is never world-readable, even for an instant: command
  // results and log lines can carry secrets. SQLite gives -wal and -shm the mode of the
  // database file, and chmod fixes a file left by an older install.
  closeSync(openSync(path, "a", 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }

  // The agent is the only writer; the busy timeout covers an operator reading the file
  // with the sqlite3 shell while the agent runs.
  // The executable keeps a verified copy of its SQLite addon beside the journal.
  const binding = sqliteNativeBinding(dirname(path));
  // @types/better-sqlite3 knows only the string form of nativeBinding; the addon object works too.
  const db = new Database(path, {
    timeout: BUSY_TIMEOUT_MS,
    ...(binding === null ? {} : { nativeBinding: binding as unknown as string }),
  });
  try {
    // Switching a fresh file to WAL needs an exclusive lock, and when two processes open it
    // at once (the daemon starting while `status` polls) SQLite may refuse one at once with
    // SQLITE_BUSY instead of waiting (its deadlock avoidance skips the busy timeout): retry.
    retryWhileBusy(() => db.pragma("journal_mode = WAL"), BUSY_TIMEOUT_MS);
    // NORMAL in WAL mode: a commit is in the WAL before the call returns, so a crash or
    // kill of the agent loses nothing; only a power cut or kernel crash can roll back the
    // last transactions (never corrupt the file). FULL would fsync on every event append,
    // which caps a log stream at the disk's fsync rate. Command writes, whose loss could
    // make a command run twice, switch to FULL for their commit (see `durableWrites`).
    db.pragma("synchronous = NORMAL");
    db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Runs `work` again while SQLite answers SQLITE_BUSY, for up to `forMs`, with short pauses. */
function retryWhileBusy<T>(work: () => T, forMs: number): T {
  const deadline = Date.now() + forMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      return work();
    } catch (error) {
      if ((error as { code?: string }).code !== "SQLITE_BUSY" || Date.now() > deadline) throw error;
      Atomics.wait(pause, 0, 0, 5 + Math.floor(Math.random() * 20));
    }
  }
}

/**
 * Wraps a write so its commit is fsynced (synchronous = FULL). SQLite refuses to change the
 * level inside a transaction, so the wrapped function must be the outermost transaction.
 */
export function durableWrites(db: Database.Database) {
  const full = db.prepare("PRAGMA synchronous = FULL");
  const normal = db.prepare("PRAGMA synchronous = NORMAL");
  return <A extends unknown[], R>(write: (...args: A) => R) =>
    (...args: A): R => {
      full.run();
      try {
        return write(...args);
      } finally {
        normal.run();
      }
    };
}
