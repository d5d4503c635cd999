// Commands the agent has seen: recorded before they run, so a repeated id is answered from
// the record and never run twice, and a crash mid-command is found on the next start.
// Forgetting them again is command-forgetting.ts.
import type { JournalDb } from "./database.ts";
import { JournalError } from "./journal-error.ts";
import type {
  AcceptCommandInput,
  AcceptOutcome,
  CommandRecord,
  CommandStatus,
  RejectCommandInput,
} from "./journal-types.ts";
import type { Meta } from "./meta.ts";

interface CommandRow {
  command_id: string;
  seq: number | null;
  type: string | null;
  command: string;
  received_at: string;
  status: CommandStatus;
  result: string | null;
  finished_at: string | null;
}

export interface CommandsJournal {
  accept(input: AcceptCommandInput): AcceptOutcome;
  markRunning(commandId: string): CommandRecord;
  finish(commandId: string, result: unknown): CommandRecord;
  reject(input: RejectCommandInput): CommandRecord;
  get(commandId: string): CommandRecord | null;
  lastSeq(): number;
  interrupted(): CommandRecord[];
}

export function createCommandsJournal(deps: {
  db: JournalDb;
  meta: Meta;
  now: () => Date;
}): CommandsJournal {
  const { db, meta, now } = deps;

  const insert = db.prepare<[CommandRow]>(`
    INSERT INTO commands (command_id, seq, type, command, received_at, status, result, finished_at)
    VALUES (@command_id, @seq, @type, @command, @received_at, @status, @result, @finished_at)
    ON CONFLICT (command_id) DO NOTHING`);
  const selectOne = db.prepare<[string], CommandRow>("SELECT * FROM commands WHERE command_id = ?");
  const toRunning = db.prepare<[string]>(
    "UPDATE commands SET status = 'running' WHERE command_id = ? AND status = 'accepted'",
  );
  const toDone = db.prepare<[string, string, string]>(`
    UPDATE commands SET status = 'done', result = ?, finished_at = ?
    WHERE command_id = ? AND status IN ('accepted', 'running')`);
  const selectUnfinished = db.prepare<[], CommandRow>(
    "SELECT * FROM commands WHERE status IN ('accepted', 'running') ORDER BY seq, received_at",
  );

  // Whatever was unfinished when the file was opened belongs to a previous process: it
  // either crashed while running it or before starting it. Commands this process accepts
  // later are its own business and must not show up here.
  const unfinishedAtOpen = new Set(selectUnfinished.all().map((row) => row.command_id));

  function find(commandId: string): CommandRecord {
    const row = selectOne.get(commandId);
    if (!row) throw new JournalError("unknown_command", `no journalled command ${commandId}`);
    return toRecord(row);
  }

  function transitionError(commandId: string, to: CommandStatus): JournalError {
    const current = find(commandId);
    return new JournalError(
      "invalid_transition",
      `command ${commandId} is ${current.status}, cannot become ${to}`,
    );
  }

  const accept = db.transaction((input: AcceptCommandInput): AcceptOutcome => {
    if (!Number.isSafeInteger(input.seq) || input.seq < 0) {
      throw new JournalError("invalid_input", `command seq must be a non-negative integer`);
    }
    const inserted = insert.run({
      command_id: requireId(input.commandId),
      seq: input.seq,
      type: input.type,
      command: toJson(input.command, "command"),
      received_at: now().toISOString(),
      status: "accepted",
      result: null,
      finished_at: null,
    });
    if (inserted === 0) return { shouldRun: false, record: find(input.commandId) };
    meta.raise("last_command_seq", input.seq);
    return { shouldRun: true, record: find(input.commandId) };
  });

  const reject = db.transaction((input: RejectCommandInput): CommandRecord => {
    const at = now().toISOString();
    // A replay of a known id keeps its first record (done stays done), so the caller
    // answers a replay of a finished command with the original result.
    insert.run({
      command_id: requireId(input.commandId),
      seq: input.seq,
      type: input.type,
      command: toJson(input.command, "command"),
      received_at: at,
      status: "rejected",
      result: toJson(input.result, "result"),
      finished_at: at,
    });
    return find(input.commandId);
  });

  return {
    accept,
    reject,
    markRunning(commandId) {
      if (toRunning.run(commandId) === 0) throw transitionError(commandId, "running");
      return find(commandId);
    },
    finish(commandId, result) {
      const changed = toDone.run(toJson(result, "result"), now().toISOString(), commandId);
      if (changed === 0) throw transitionError(commandId, "done");
      return find(commandId);
    },
    get(commandId) {
      const row = selectOne.get(commandId);
      return row ? toRecord(row) : null;
    },
    lastSeq: () => meta.get("last_command_seq"),
    interrupted: () =>
      selectUnfinished
        .all()
        .filter((row) => unfinishedAtOpen.has(row.command_id))
        .map(toRecord),
  };
}

function requireId(commandId: string): string {
  if (typeof commandId !== "string" || commandId.length === 0) {
    throw new JournalError("invalid_input", "command_id must be a non-empty string");
  }
  return commandId;
}

function toJson(value: unknown, what: string): string {
  const json = JSON.stringify(value);
  if (json === undefined) throw new JournalError("invalid_input", `${what} is not JSON`);
  return json;
}

function toRecord(row: CommandRow): CommandRecord {
  return {
    commandId: row.command_id,
    seq: row.seq,
    type: row.type,
    command: JSON.parse(row.command),
    receivedAt: row.received_at,
    status: row.status,
    result: row.result === null ? null : JSON.parse(row.result),
    finishedAt: row.finished_at,
  };
}
