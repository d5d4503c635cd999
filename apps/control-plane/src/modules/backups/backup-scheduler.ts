// The backup scheduler: one pass a minute (a pg-boss cron job, one per minute across all
// replicas) that
// - fails the backups whose operation ended without a result (timed out, cancelled), so
//   they are reported like any failed backup;
// - gives every newly deployed environment the default schedule;
// - creates the due backups (backup_type `scheduled`) through the backups service, so the
//   agent runs them as it runs a manual one. A slot is taken by one statement before its
//   backup is created, so a due backup is created once even when passes overlap on several
//   replicas. A slot whose server is offline is not taken, one whose environment is busy is
//   given back: the next pass after that takes the latest slot, so skipped slots are caught
//   up by one backup, not one per slot;
// - reports a slot missed (backup.missed, and the environment's red mark) when it is older
//   than the grace period and no scheduled backup taken since has completed or failed;
// - applies the retention rule once a scheduled backup has completed, deleting through the
//   injected deleteBackup (the record, and the stored bytes once a backup store exists).
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";
import type { BackupsService } from "./backups.service.ts";
import { backupsToPrune } from "./backup-retention.ts";
import { defaultMinuteOfDay, dueSlot, missedSlot, type BackupFrequency, type SlotSchedule } from "./backup-slots.ts";
import type { BackupSchedulesRepo, ScheduledEnvironment } from "./backup-schedules.repo.ts";

export const BACKUP_SCHEDULER_QUEUE = "backups.scheduler";
export const BACKUP_SCHEDULER_CRON = "* * * * *";
/** How long after its slot a scheduled backup may take before the slot is reported missed. */
export const DEFAULT_MISSED_GRACE_MS = 2 * 3600_000;
export const SCHEDULED_BACKUP = "scheduled";
/** Backups one pass creates at once. */
const CREATE_CONCURRENCY = 4;

/** Deletes a backup: its record, and its bytes wherever they are stored. */
export type DeleteBackup = (organizationId: string, backupId: string) => Promise<void>;

export interface SchedulerPass {
  /** Ids of the backups created. */
  created: string[];
  /** Environments whose slot was reported missed. */
  missed: string[];
  /** Ids of the backups the retention rule deleted. */
  pruned: string[];
  /** What failed (each part of a pass runs whatever another's fate). */
  errors: unknown[];
}

const slotSchedule = (s: ScheduledEnvironment): SlotSchedule => ({ frequency: s.frequency as BackupFrequency, minuteOfDay: s.minuteOfDay, weekday: s.weekday });

function missedReason(s: ScheduledEnvironment, slot: Date): string {
  if (!s.serverOnline) return "The environment's server was offline: no backup could be taken";
  if (s.lastSlotAt && s.lastSlotAt >= slot) return "The scheduled backup did not finish within the grace period";
  return "No backup could be started (another operation kept the environment busy)";
}

export function createBackupScheduler(deps: {
  schedules: Omit<BackupSchedulesRepo, "get" | "upsert">;
  backups: Pick<BackupsService, "create">;
  clock: Clock;
  deleteBackup: DeleteBackup;
  /** Default 2 hours. */
  missedGraceMs?: number;
}) {
  const grace = deps.missedGraceMs ?? DEFAULT_MISSED_GRACE_MS;

  async function createOne(s: ScheduledEnvironment, now: Date, out: SchedulerPass) {
    const slot = dueSlot(slotSchedule(s), s, now);
    // An offline server's slot waits: the first pass after it reconnects takes the latest slot.
    if (!slot || !s.serverOnline) return;
    if (!(await deps.schedules.claimSlot(s.environmentId, slot))) return;
    try {
      const { backupId } = await deps.backups.create(
        { organizationId: s.organizationId, projectId: null },
        s.environmentId,
        { backup_type: SCHEDULED_BACKUP, comment: `Scheduled backup for ${slot.toISOString()}` },
        { userId: null, apiKeyId: null },
      );
      out.created.push(backupId);
    } catch (err) {
      await deps.schedules.releaseSlot(s.environmentId, slot, s.lastSlotAt);
      // Busy: another operation runs; a later pass tries again.
      if (!(err instanceof DomainError && err.code === "task_in_progress")) throw err;
    }
  }

  /** Creates the due backups, a few at a time (each is an operation with a signed command: ~30 ms). */
  async function createDue(schedules: ScheduledEnvironment[], now: Date, out: SchedulerPass) {
    let next = 0;
    const worker = async () => {
      while (next < schedules.length) {
        const s = schedules[next++]!;
        await createOne(s, now, out).catch((err: unknown) => void out.errors.push(err));
      }
    };
    await Promise.all(Array.from({ length: Math.min(CREATE_CONCURRENCY, schedules.length) }, worker));
  }

  async function reportMissed(schedules: ScheduledEnvironment[], now: Date, out: SchedulerPass) {
    for (const s of schedules) {
      const slot = missedSlot(slotSchedule(s), s, now, grace);
      // A backup requested at or after the slot ended: the slot is covered (or its failure was reported).
      if (!slot || (s.lastEndedAt && s.lastEndedAt >= slot)) continue;
      if (await deps.schedules.markMissed(s, slot, now, missedReason(s, slot))) out.missed.push(s.environmentId);
    }
  }

  async function applyRetention(out: SchedulerPass) {
    for (const env of await deps.schedules.awaitingRetention()) {
      if (!(await deps.schedules.claimRetention(env.environmentId, env.prunedThrough, env.newest))) continue;
      const prune = backupsToPrune(await deps.schedules.completedScheduled(env.environmentId), env);
      try {
        for (const b of prune) {
          await deps.deleteBackup(env.organizationId, b.id);
          out.pruned.push(b.id);
        }
      } catch (err) {
        await deps.schedules.releaseRetention(env.environmentId, env.newest, env.prunedThrough);
        out.errors.push(err);
      }
    }
  }

  return {
    /** One pass; a part that fails is reported in `errors` and the others still run. */
    async tick(): Promise<SchedulerPass> {
      const now = deps.clock.now();
      const out: SchedulerPass = { created: [], missed: [], pruned: [], errors: [] };
      const fail = (err: unknown) => void out.errors.push(err);
      await deps.schedules.failOrphaned(now).catch(fail);
      await deps.schedules.addDefaults(now, defaultMinuteOfDay).catch(fail);
      const schedules = await deps.schedules.enabledSchedules().catch((err: unknown) => (fail(err), []));
      await createDue(schedules, now, out).catch(fail);
      await reportMissed(schedules, now, out).catch(fail);
      await applyRetention(out).catch(fail);
      return out;
    },
  };
}
export type BackupScheduler = ReturnType<typeof createBackupScheduler>;
