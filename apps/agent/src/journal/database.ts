// Opens the journal's SQLite file with the permissions and pragmas durability depends on, and
// the little the journal needs of a SQLite binding: statements, transactions, error codes.
// The agent runs on Node's built-in node:sqlite; `SqliteDriver` lets the benchmark
// (test/bench/sqlite.bench.ts) run the same journal on better-sqlite3.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import type * as NodeSqlite from "node:sqlite";

const BUSY_TIMEOUT_MS = 5_000;
// A checkpoint truncates the WAL back to this size, so a burst of events does not leave
// a large -wal file behind for the life of the process.
const WAL_SIZE_LIMIT_BYTES = 32 * 1024 * 1024;

/** What the journal calls on a binding's prepared statement (node:sqlite's and better-sqlite3's agree). */
export interface SqliteStatement {
  run(...params: never[]): { changes: number | bigint };
  get(...params: never[]): unknown;
  all(...params: never[]): unknown[];
}

/** An open SQLite connection, as node:sqlite's DatabaseSync and better-sqlite3's Database both are. */
export interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  close(): unknown;
}

export interface SqliteDriver {
  name: string;
  open(path: string): SqliteConnection;
}

let nodeSqlite: typeof NodeSqlite | undefined;

/**
 * node:sqlite, loaded on first use. Node 22 warns on every load that SQLite is experimental
 * (Node 24 no longer does); the agent's output is read by operators, so that one warning is
 * held back. It is a built-in module: nothing to compile, nothing packed in the executable.
 */
function loadNodeSqlite(): typeof NodeSqlite {
  if (nodeSqlite !== undefined) return nodeSqlite;
  const emitWarning = process.emitWarning;
  process.emitWarning = function (this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === "string" ? warning : warning.message;
    if (text.startsWith("SQLite is an experimental feature")) return;
    return (emitWarning as (...args: unknown[]) => void).call(this, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    nodeSqlite = process.getBuiltinModule("node:sqlite") as typeof NodeSqlite;
  } finally {
    process.emitWarning = emitWarning;
  }
  return nodeSqlite;
}

export const nodeSqliteDriver: SqliteDriver = {
  name: "node:sqlite",
  open: (path) => new (loadNodeSqlite().DatabaseSync)(path) as unknown as SqliteConnection,
};

/** A prepared statement with the journal's parameter and row types; `run` answers the changed row count. */
export interface Statement<P extends unknown[], R> {
  run(...params: P): number;
  get(...params: P): R | undefined;
  all(...params: P): R[];
}

export interface JournalDb {
  prepare<P extends unknown[] = [], R = never>(sql: string): Statement<P, R>;
  exec(sql: string): void;
  /**
   * Wraps `work` in a transaction: BEGIN (or BEGIN IMMEDIATE) and COMMIT, ROLLBACK when it
   * throws; called inside another transaction, a savepoint, as better-sqlite3's did.
   */
  transaction<A extends unknown[], R>(work: (...args: A) => R, begin?: "deferred" | "immediate"): (...args: A) => R;
  close(): void;
}

// Primary result codes (https://sqlite.org/rescode.html) by number: node:sqlite reports the
// number (`errcode`), better-sqlite3 the name (`code`). The agent branches on the name
// (cli/run-command.ts: a busy or full journal may pass, a newer one needs a person).
const RESULT_CODES: Record<number, string> = {
  1: "SQLITE_ERROR", 2: "SQLITE_INTERNAL", 3: "SQLITE_PERM", 4: "SQLITE_ABORT", 5: "SQLITE_BUSY",
  6: "SQLITE_LOCKED", 7: "SQLITE_NOMEM", 8: "SQLITE_READONLY", 9: "SQLITE_INTERRUPT", 10: "SQLITE_IOERR",
  11: "SQLITE_CORRUPT", 12: "SQLITE_NOTFOUND", 13: "SQLITE_FULL", 14: "SQLITE_CANTOPEN", 15: "SQLITE_PROTOCOL",
  16: "SQLITE_EMPTY", 17: "SQLITE_SCHEMA", 18: "SQLITE_TOOBIG", 19: "SQLITE_CONSTRAINT", 20: "SQLITE_MISMATCH",
  21: "SQLITE_MISUSE", 22: "SQLITE_NOLFS", 23: "SQLITE_AUTH", 24: "SQLITE_FORMAT", 25: "SQLITE_RANGE", 26: "SQLITE_NOTADB",
};

/** Gives a node:sqlite error the SQLITE_* `code` better-sqlite3's errors carry. */
function withSqliteCode(error: unknown): unknown {
  const e = error as { code?: unknown; errcode?: unknown } | null;
  if (e !== null && typeof e === "object" && typeof e.errcode === "number" && !(typeof e.code === "string" && e.code.startsWith("SQLITE_"))) {
    const name = RESULT_CODES[e.errcode & 0xff];
    if (name !== undefined) Object.defineProperty(e, "code", { value: name, configurable: true, writable: true, enumerable: true });
  }
  return error;
}

export function isBusy(error: unknown): boolean {
  return (withSqliteCode(error) as { code?: unknown } | null)?.code === "SQLITE_BUSY";
}

function wrap(connection: SqliteConnection): JournalDb {
  const raw = (sql: string) => {
    try {
      return connection.prepare(sql) as unknown as {
        run(...p: unknown[]): { changes: number | bigint };
        get(...p: unknown[]): unknown;
        all(...p: unknown[]): unknown[];
      };
    } catch (error) {
      throw withSqliteCode(error);
    }
  };
  const begin = { deferred: raw("BEGIN"), immediate: raw("BEGIN IMMEDIATE") };
  const commit = raw("COMMIT");
  const rollback = raw("ROLLBACK");
  const savepoint = raw("SAVEPOINT nested");
  const release = raw("RELEASE nested");
  const rollbackTo = raw("ROLLBACK TO nested");
  let depth = 0;

  return {
    prepare<P extends unknown[], R>(sql: string): Statement<P, R> {
      const statement = raw(sql);
      return {
        run(...params) {
          try {
            return Number(statement.run(...params).changes);
          } catch (error) {
            throw withSqliteCode(error);
          }
        },
        get(...params) {
          try {
            return statement.get(...params) as R | undefined;
          } catch (error) {
            throw withSqliteCode(error);
          }
        },
        all(...params) {
          try {
            return statement.all(...params) as R[];
          } catch (error) {
            throw withSqliteCode(error);
          }
        },
      };
    },
    exec(sql) {
      try {
        connection.exec(sql);
      } catch (error) {
        throw withSqliteCode(error);
      }
    },
    transaction(work, mode = "deferred") {
      return (...args) => {
        const nested = depth > 0;
        try {
          (nested ? savepoint : begin[mode]).run();
        } catch (error) {
          throw withSqliteCode(error);
        }
        depth += 1;
        try {
          const result = work(...args);
          (nested ? release : commit).run();
          return result;
        } catch (error) {
          try {
            if (nested) {
              rollbackTo.run();
              release.run();
            } else {
              rollback.run();
            }
          } catch {
            // SQLite rolled the transaction back itself (a full disk, an I/O error).
          }
          throw withSqliteCode(error);
        } finally {
          depth -= 1;
        }
      };
    },
    close: () => void connection.close(),
  };
}

export function openDatabase(path: string, driver: SqliteDriver = nodeSqliteDriver): JournalDb {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // Create the file ourselves so it is never world-readable, even for an instant: command
  // results and log lines can carry secrets. SQLite gives -wal and -shm the mode of the
  // database file, and chmod fixes a file left by an older install.
  closeSync(openSync(path, "a", 0o600));
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) chmodSync(file, 0o600);
  }

  let connection: SqliteConnection;
  try {
    connection = driver.open(path);
  } catch (error) {
    throw withSqliteCode(error);
  }
  try {
    // The agent is the only writer; the busy timeout covers an operator reading the file
    // with the sqlite3 shell while the agent runs.
    connection.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Switching a fresh file to WAL needs an exclusive lock, and when two processes open it
    // at once (the daemon starting while `status` polls) SQLite may refuse one at once with
    // SQLITE_BUSY instead of waiting (its deadlock avoidance skips the busy timeout): retry.
    retryWhileBusy(() => connection.exec("PRAGMA journal_mode = WAL"), BUSY_TIMEOUT_MS);
    // NORMAL in WAL mode: a commit is in the WAL before the call returns, so a crash or
    // kill of the agent loses nothing; only a power cut or kernel crash can roll back the
    // last transactions (never corrupt the file). FULL would fsync on every event append,
    // which caps a log stream at the disk's fsync rate. Command writes, whose loss could
    // make a command run twice, switch to FULL for their commit (see `durableWrites`).
    connection.exec("PRAGMA synchronous = NORMAL");
    connection.exec(`PRAGMA journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
    return wrap(connection);
  } catch (error) {
    connection.close();
    throw withSqliteCode(error);
  }
}

/** Runs `work` again while SQLite answers SQLITE_BUSY, for up to `forMs`, with short pauses. */
function retryWhileBusy<T>(work: () => T, forMs: number): T {
  const deadline = Date.now() + forMs;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      return work();
    } catch (error) {
      if (!isBusy(error) || Date.now() > deadline) throw error;
      Atomics.wait(pause, 0, 0, 5 + Math.floor(Math.random() * 20));
    }
  }
}

/**
 * Wraps a write so its commit is fsynced (synchronous = FULL). SQLite refuses to change the
 * level inside a transaction, so the wrapped function must be the outermost transaction.
 */
export function durableWrites(db: JournalDb) {
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
