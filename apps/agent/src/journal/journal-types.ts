// Types of the agent's journal: commands seen, events not yet acknowledged, and its figures.
// Kept generic (kind/level/body) so the journal does not depend on the protocol's payloads.
import type { SqliteDriver } from "./database.ts";

export type JsonObject = { [key: string]: unknown };

export type LogLevel = "debug" | "info" | "warning" | "error";

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warning", "error"];

/** What a caller hands to `append`; the journal assigns `seq` and, when absent, `ts`. */
export interface EventInput {
  kind: string;
  ts?: string;
  /** Required for kind "log", absent or null for every other kind. */
  level?: LogLevel | null;
  body: JsonObject;
}

export interface JournalEvent {
  seq: number;
  ts: string;
  kind: string;
  level: LogLevel | null;
  body: JsonObject;
}

export type CommandStatus = "accepted" | "running" | "done" | "rejected";

export interface CommandRecord {
  commandId: string;
  /** Null only for a rejected command whose seq could not be trusted or read. */
  seq: number | null;
  type: string | null;
  /** The full signed command as received. */
  command: unknown;
  receivedAt: string;
  status: CommandStatus;
  /** The answer given (or to give again on a replay); null until finished. */
  result: unknown;
  finishedAt: string | null;
}

export interface AcceptCommandInput {
  commandId: string;
  seq: number;
  type: string;
  command: unknown;
}

export interface AcceptOutcome {
  /** False when the id was seen before: answer from `record`, never run it again. */
  shouldRun: boolean;
  record: CommandRecord;
}

export interface RejectCommandInput {
  commandId: string;
  seq: number | null;
  type: string | null;
  command: unknown;
  /** The rejection as it is reported back, recorded so a replay gets the same answer. */
  result: unknown;
}

/** A finished command is forgotten only when both hold. */
export interface PruneCutoffs {
  /** It finished before this. */
  finishedBefore: Date;
  /** Its signed `expires_at` is before this, so a replay of it is refused as expired. */
  expiredBefore: Date;
}

export interface FinishCommandInput {
  commandId: string;
  result: unknown;
  /** Usually the command.result event; written in the same transaction as the result. */
  event?: EventInput;
}

export interface FinishOutcome {
  record: CommandRecord;
  event: JournalEvent | null;
}

export type DropReason = "log.debug" | "log.info" | "log.warning" | "stats";

export type DroppedCounts = Record<DropReason, number>;

export interface AckOutcome {
  deleted: number;
  lastAckedSeq: number;
}

export interface JournalStats {
  pendingCount: number;
  pendingBytes: number;
  oldestPendingSeq: number | null;
  oldestPendingAgeMs: number | null;
  nextEventSeq: number;
  lastAckedSeq: number;
  lastCommandSeq: number;
  dropped: DroppedCounts;
  droppedTotal: number;
  /** Null means no cap on that dimension. */
  maxPendingEvents: number | null;
  maxPendingBytes: number | null;
  /** True when only undroppable events remain and they exceed a cap. */
  overCap: boolean;
  fileBytes: number;
  walBytes: number;
}

export interface JournalOptions {
  path: string;
  /** The SQLite binding; node:sqlite unless given (the benchmark compares better-sqlite3). */
  driver?: SqliteDriver;
  /** Defaults to 100 000; Infinity for no cap. */
  maxPendingEvents?: number;
  /** Defaults to 64 MiB; Infinity for no cap. */
  maxPendingBytes?: number;
  now?: () => Date;
}

export interface Journal {
  acceptCommand(input: AcceptCommandInput): AcceptOutcome;
  markCommandRunning(commandId: string): CommandRecord;
  finishCommand(input: FinishCommandInput): FinishOutcome;
  rejectCommand(input: RejectCommandInput): CommandRecord;
  getCommand(commandId: string): CommandRecord | null;
  lastCommandSeq(): number;
  /** The highest seq of a command that ran and was then forgotten (pruned); 0 when none. */
  forgottenCommandSeq(): number;
  interruptedCommands(): CommandRecord[];
  /** Forgets finished commands past both cutoffs; returns how many. */
  pruneCommands(cutoffs: PruneCutoffs): number;

  append(input: EventInput): JournalEvent;
  appendMany(inputs: readonly EventInput[]): JournalEvent[];
  pending(afterSeq?: number, limit?: number): JournalEvent[];
  ack(upToSeq: number): AckOutcome;
  nextEventSeq(): number;
  lastAckedSeq(): number;
  skipEventSeqTo(seq: number): number;
  droppedCount(): DroppedCounts;

  stats(): JournalStats;
  close(): void;
}
