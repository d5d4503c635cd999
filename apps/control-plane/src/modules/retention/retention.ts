// Retention of the time-partitioned tables (migration 0022): deployment_logs, a deployment's
// log history, kept BERTH_LOG_RETENTION_DAYS; agent_events, the raw journal of what agents sent
// (steps, results, server logs; read by nobody in the product, kept for support and audit),
// kept BERTH_AGENT_EVENT_RETENTION_DAYS. 0 keeps a table's rows for good.
//
// One run, an hourly pg-boss job (and once when a replica starts):
// - makes this month's partition and the next MONTHS_AHEAD ones, so inserts land in a month
//   of their own, never in the DEFAULT partition;
// - drops each month partition whose whole month is older than the retention (a DROP is
//   instant, where a DELETE of the same rows rewrites and vacuums them: bench:retention);
// - deletes the expired rows of the DEFAULT partition (rows dated where no month partition
//   was: a far-off agent clock) in chunks.
// Rows of a month still partly inside the retention stay until the whole month has expired:
// a row is kept at least its retention and at most a month longer.
//
// agent_commands, the command outbox, is not partitioned either: commands that ended more than
// BERTH_COMMAND_RETENTION_DAYS ago (by when they were issued) are deleted in chunks. Kept
// whatever their age: commands still pending or accepted, and those an audit entry names (the
// support console's commands, whose outcome and output the audit log shows). A command holds
// no secret once it left pending (agents/agent-commands.repo.ts), so this bounds the table,
// not what it discloses; deployments keep their own status and history.
//
// caught_mails, the mail staging and development ERPs sent: a box is trimmed as its mail
// arrives (modules/mails), and this run deletes what expired in boxes no new mail reached.
//
// org_events are not partitioned: events/retention.ts prunes them row by row every minute,
// server.stats (most of their rows; the dashboard's charts read two hours) after two hours and
// the rest after seven days (the event stream's Last-Event-ID resume window, which
// events.routes.ts answers with `reset` beyond, and the webhook fan-out's reach). Month or day
// partitions do not fit a two-hour window, and hour partitions would make every event-stream
// read, which names no time, visit some 170 of them.
import type pg from "pg";
import { deleteExpiredMails } from "../mails/mails.repo.ts";
import { mailExpiry } from "../mails/mail-rules.ts";
import { DELETE_CHUNK, deleteEndedCommands, deleteExpiredFromDefault, dropPartition, ensurePartition, monthPartitions, releaseRetentionLock, tryRetentionLock, type PartitionedTable } from "./retention.repo.ts";

export const RETENTION_QUEUE = "retention.partitions";
/** Hourly, at minute 17 (off the hour, when other schedules start). */
export const RETENTION_CRON = "17 * * * *";
/** Month partitions made ahead of the current one. */
export const MONTHS_AHEAD = 2;

export interface RetentionSettings {
  /** Days deployment_logs are kept; 0: for good. */
  logDays: number;
  /** Days agent_events are kept; 0: for good. */
  agentEventDays: number;
  /** Days an ended command is kept in agent_commands after its issue; 0: for good. */
  commandDays: number;
}

export const DEFAULT_RETENTION: RetentionSettings = { logDays: 90, agentEventDays: 30, commandDays: 90 };

export interface RetentionRun {
  /** false: another run (another replica's) held the lock, this one did nothing. */
  ran: boolean;
  created: string[];
  dropped: string[];
  /** Rows deleted from DEFAULT partitions. */
  deleted: number;
  /** Ended commands deleted from agent_commands. */
  commands: number;
  /** Expired caught mail deleted. */
  mails: number;
}

const DAY_MS = 86_400_000;

/** The first instant (UTC) of the month `offset` months after the one holding `at`. */
export function monthStart(at: Date, offset = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
}

/** Where rows of a table expire at `now`: rows dated before it go; null when kept for good. */
export function expiryCutoff(days: number, now: Date): Date | null {
  return days > 0 ? new Date(now.getTime() - days * DAY_MS) : null;
}

/** Whether a month partition has wholly expired: its month ended at or before the cutoff. */
export function monthExpired(month: Date, cutoff: Date | null): boolean {
  return cutoff !== null && monthStart(month, 1).getTime() <= cutoff.getTime();
}

/** One retention run at `now`. Safe on several replicas at once: one runs, the others return ran false. */
export async function runRetention(pool: pg.Pool, settings: RetentionSettings, now: Date): Promise<RetentionRun> {
  const out: RetentionRun = { ran: false, created: [], dropped: [], deleted: 0, commands: 0, mails: 0 };
  const client = await pool.connect();
  try {
    if (!(await tryRetentionLock(client))) return out;
    out.ran = true;
    try {
      const tables: [PartitionedTable, number][] = [
        ["deployment_logs", settings.logDays],
        ["agent_events", settings.agentEventDays],
      ];
      for (const [table, days] of tables) {
        for (let m = 0; m <= MONTHS_AHEAD; m++) {
          const month = monthStart(now, m);
          if (await ensurePartition(client, table, month)) out.created.push(partitionName(table, month));
        }
        const cutoff = expiryCutoff(days, now);
        if (cutoff === null) continue;
        for (const p of await monthPartitions(client, table)) {
          if (!monthExpired(p.month, cutoff)) continue;
          await dropPartition(client, table, p.name);
          out.dropped.push(p.name);
        }
        out.deleted += await deleteExpiredFromDefault(client, table, cutoff);
      }
      const commandsCutoff = expiryCutoff(settings.commandDays, now);
      if (commandsCutoff !== null) out.commands = await deleteEndedCommands(client, commandsCutoff);
      out.mails = await deleteExpiredMails(client, mailExpiry(now), DELETE_CHUNK);
    } finally {
      await releaseRetentionLock(client);
    }
    return out;
  } finally {
    client.release();
  }
}

/** The table a month partition (partitionName's name) belongs to. */
export function tableOfPartition(name: string): string {
  return name.replace(/_p\d{6}$/, "");
}

/** The name berth_ensure_partition gives a month's partition. */
export function partitionName(table: PartitionedTable, month: Date): string {
  return `${table}_p${month.getUTCFullYear()}${String(month.getUTCMonth() + 1).padStart(2, "0")}`;
}
