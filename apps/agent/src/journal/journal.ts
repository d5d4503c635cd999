// The agent's SQLite journal: a durable buffer of commands seen and events not yet
// acknowledged. Not state: the control plane holds that.
import { existsSync, statSync } from "node:fs";
import { createCommandForgetting, ensureForgottenSeq } from "./command-forgetting.ts";
import { createCommandsJournal } from "./commands-journal.ts";
import { durableWrites, openDatabase } from "./database.ts";
import { createEventsJournal } from "./events-journal.ts";
import { JournalError } from "./journal-error.ts";
import type { FinishCommandInput, FinishOutcome, Journal, JournalOptions } from "./journal-types.ts";
import { createMeta } from "./meta.ts";
import type { Caps } from "./retention.ts";
import { DROP_ORDER } from "./retention.ts";
import { migrate } from "./schema.ts";

// About a day of a chatty deployment's logs, and small enough for any server's disk.
const DEFAULT_MAX_PENDING_EVENTS = 100_000;
const DEFAULT_MAX_PENDING_BYTES = 64 * 1024 * 1024;

export function openJournal(options: JournalOptions): Journal {
  const now = options.now ?? (() => new Date());
  const caps: Caps = {
    maxPendingEvents: capOption("maxPendingEvents", options.maxPendingEvents, DEFAULT_MAX_PENDING_EVENTS),
    maxPendingBytes: capOption("maxPendingBytes", options.maxPendingBytes, DEFAULT_MAX_PENDING_BYTES),
  };
  const db = openDatabase(options.path, options.driver);
  try {
    migrate(db);
    ensureForgottenSeq(db);
  } catch (error) {
    db.close();
    throw error;
  }

  const meta = createMeta(db);
  const commands = createCommandsJournal({ db, meta, now });
  const forgetting = createCommandForgetting({ db, meta });
  const events = createEventsJournal({ db, meta, caps, now });
  // Command writes are fsynced: losing one to a power cut could let a command whose effects
  // already happened run again. They are rare, unlike event appends.
  const durable = durableWrites(db);

  // The result and its event commit together, so a crash cannot leave a finished command
  // whose result never reaches the control plane.
  const finish = db.transaction((input: FinishCommandInput): FinishOutcome => {
    const record = commands.finish(input.commandId, input.result);
    const event = input.event === undefined ? null : events.append(input.event);
    return { record, event };
  });

  return {
    acceptCommand: durable(commands.accept),
    markCommandRunning: durable(commands.markRunning),
    finishCommand: durable(finish),
    rejectCommand: durable(commands.reject),
    getCommand: commands.get,
    lastCommandSeq: commands.lastSeq,
    forgottenCommandSeq: forgetting.forgottenSeq,
    interruptedCommands: commands.interrupted,
    pruneCommands: forgetting.prune,

    append: events.append,
    appendMany: events.appendMany,
    pending: events.pending,
    ack: events.ack,
    nextEventSeq: events.nextSeq,
    lastAckedSeq: events.lastAckedSeq,
    skipEventSeqTo: events.skipTo,
    droppedCount: events.droppedCount,

    stats() {
      const pending = events.summary();
      const dropped = events.droppedCount();
      const oldestMs = pending.oldestTs === null ? NaN : Date.parse(pending.oldestTs);
      return {
        pendingCount: pending.count,
        pendingBytes: pending.bytes,
        oldestPendingSeq: pending.oldestSeq,
        oldestPendingAgeMs: Number.isNaN(oldestMs) ? null : Math.max(0, now().getTime() - oldestMs),
        nextEventSeq: events.nextSeq(),
        lastAckedSeq: events.lastAckedSeq(),
        lastCommandSeq: commands.lastSeq(),
        dropped,
        droppedTotal: DROP_ORDER.reduce((sum, reason) => sum + dropped[reason], 0),
        maxPendingEvents: finiteOrNull(caps.maxPendingEvents),
        maxPendingBytes: finiteOrNull(caps.maxPendingBytes),
        overCap: pending.overCap,
        fileBytes: fileSize(options.path),
        walBytes: fileSize(`${options.path}-wal`),
      };
    },
    close: () => db.close(),
  };
}

function capOption(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (value === Infinity || (Number.isSafeInteger(value) && value > 0)) return value;
  throw new JournalError("invalid_input", `${name} must be a positive integer or Infinity`);
}

function finiteOrNull(value: number): number | null {
  return Number.isFinite(value) ? value : null;
}

function fileSize(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}
