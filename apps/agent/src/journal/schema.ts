// The journal's tables, created or migrated on open; `user_version` holds the applied count.
import type { JournalDb } from "./database.ts";
import { JournalError } from "./journal-error.ts";

// Append only: each entry moves the schema one version forward.
const MIGRATIONS: readonly string[] = [
  `
  -- Counters that must survive restarts and deletes (next_event_seq is never reused);
  -- drop_notice_seq is the seq of the latest drop notice, 0 before the first.
  CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
  INSERT INTO meta (key, value) VALUES
    ('next_event_seq', 1), ('last_acked_seq', 0), ('last_command_seq', 0),
    ('pending_count', 0), ('pending_bytes', 0), ('drop_notice_seq', 0);

  CREATE TABLE commands (
    command_id TEXT PRIMARY KEY,
    seq INTEGER,
    type TEXT,
    command TEXT NOT NULL,
    received_at TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('accepted', 'running', 'done', 'rejected')),
    result TEXT,
    finished_at TEXT,
    CHECK (status = 'rejected' OR (seq IS NOT NULL AND type IS NOT NULL))
  );
  CREATE INDEX commands_unfinished ON commands (status) WHERE status IN ('accepted', 'running');
  CREATE INDEX commands_finished_at ON commands (finished_at) WHERE finished_at IS NOT NULL;

  -- drop_rank orders what may be dropped when full (0 first); NULL = never dropped.
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    level TEXT,
    body TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    drop_rank INTEGER
  );
  CREATE INDEX events_droppable ON events (drop_rank, seq) WHERE drop_rank IS NOT NULL;

  CREATE TABLE dropped (reason TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID;
  `,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

export function migrate(db: JournalDb): void {
  const userVersion = db.prepare<[], { user_version: number }>("PRAGMA user_version");
  const version = (): number => userVersion.get()?.user_version ?? 0;
  const check = (current: number): void => {
    // A downgraded agent must not write into a schema it does not understand.
    if (current > SCHEMA_VERSION) {
      throw new JournalError(
        "schema_too_new",
        `journal schema is version ${current}, this agent knows up to ${SCHEMA_VERSION}`,
      );
    }
  };
  check(version());
  if (version() === SCHEMA_VERSION) return;
  // The version is read again under the write lock: `berth-agent status` and the daemon can
  // open a fresh journal at the same moment, and only one of them may create the tables.
  db.transaction(() => {
    const current = version();
    check(current);
    for (let next = current; next < SCHEMA_VERSION; next++) {
      db.exec(MIGRATIONS[next] ?? "");
      db.exec(`PRAGMA user_version = ${next + 1}`);
    }
  }, "immediate")();
}
