// SQL of backup schedules: the settings of each environment, the scheduler's claims on
// slots (one statement each, so two replicas never both take a slot), missed slots with
// their event, and the scheduled backups the retention rule looks at.
import type pg from "pg";
import { and, eq } from "drizzle-orm";
import { backupSchedules, type Database } from "@berth/db";
import { inTransaction } from "../../db/transaction.ts";
import { appendOrgEvent } from "../events/event-log.repo.ts";

export type BackupScheduleRow = typeof backupSchedules.$inferSelect;
export type BackupScheduleSettings = Pick<BackupScheduleRow, "enabled" | "frequency" | "minuteOfDay" | "weekday" | "keepDaily" | "keepWeekly" | "keepMonthly">;

/** A schedule the scheduler looks at: the environment is active and was deployed. */
export interface ScheduledEnvironment extends BackupScheduleRow {
  projectId: string;
  serverOnline: boolean;
  /**
   * When the newest backup that completed (manual or scheduled), or scheduled one that failed
   * (its failure was reported already), was requested (its operation's creation, on the
   * scheduler's clock); null: none.
   */
  lastEndedAt: Date | null;
}

const SCHEDULED = "scheduled";

export function createBackupSchedulesRepo(db: Database) {
  const pool = db.$client as pg.Pool;
  return {
    async get(environmentId: string): Promise<BackupScheduleRow | undefined> {
      const [row] = await db.select().from(backupSchedules).where(eq(backupSchedules.environmentId, environmentId));
      return row;
    },

    /** Creates or replaces the settings; `activeSince` restarts the slots when the timing changed. */
    async upsert(organizationId: string, environmentId: string, s: BackupScheduleSettings, now: Date, timingChanged: boolean): Promise<BackupScheduleRow> {
      const [row] = await db
        .insert(backupSchedules)
        .values({ environmentId, organizationId, ...s, activeSince: now, createdAt: now, updatedAt: now })
        .onConflictDoUpdate({
          target: backupSchedules.environmentId,
          set: { ...s, updatedAt: now, ...(timingChanged ? { activeSince: now, missedSlotAt: null } : {}) },
        })
        .returning();
      return row!;
    },

    /** Gives every deployed active environment without a schedule the default one (`minuteOf` its time); how many. */
    async addDefaults(now: Date, minuteOf: (environmentId: string) => number): Promise<number> {
      const { rows } = await pool.query<{ id: string; organization_id: string }>(
        `select e.id, e.organization_id from environments e
         where e.is_active and e.status <> 'pending' and e.server_id is not null
           and not exists (select 1 from backup_schedules s where s.environment_id = e.id)
         limit 1000`,
      );
      if (rows.length === 0) return 0;
      const { rowCount } = await pool.query(
        `insert into backup_schedules (environment_id, organization_id, minute_of_day, active_since, created_at, updated_at)
         select * , $4::timestamptz, $4::timestamptz, $4::timestamptz from unnest($1::uuid[], $2::uuid[], $3::int[])
         on conflict (environment_id) do nothing`,
        [rows.map((r) => r.id), rows.map((r) => r.organization_id), rows.map((r) => minuteOf(r.id)), now],
      );
      return rowCount ?? 0;
    },

    /** Enabled schedules of active, deployed environments, with their server's and environment's state. */
    async enabledSchedules(): Promise<ScheduledEnvironment[]> {
      const { rows } = await pool.query<Record<string, unknown>>(
        `select s.*, e.project_id, coalesce(v.status = 'online', false) as server_online,
           (select max(d.created_at) from backups b join deployments d on d.id = b.deployment_id
            where b.environment_id = s.environment_id and b.backup_type <> 'pre_deploy'
              and (b.status = 'completed' or (b.backup_type = $1 and b.status = 'failed'))) as last_ended_at
         from backup_schedules s join environments e on e.id = s.environment_id
         left join servers v on v.id = e.server_id
         where s.enabled and e.is_active and e.status <> 'pending'`,
        [SCHEDULED],
      );
      return rows.map((r) => ({
        environmentId: r.environment_id as string,
        organizationId: r.organization_id as string,
        enabled: r.enabled as boolean,
        frequency: r.frequency as string,
        minuteOfDay: r.minute_of_day as number,
        weekday: r.weekday as number,
        keepDaily: r.keep_daily as number,
        keepWeekly: r.keep_weekly as number,
        keepMonthly: r.keep_monthly as number,
        activeSince: r.active_since as Date,
        lastSlotAt: (r.last_slot_at as Date | null) ?? null,
        missedSlotAt: (r.missed_slot_at as Date | null) ?? null,
        prunedThrough: (r.pruned_through as Date | null) ?? null,
        createdAt: r.created_at as Date,
        updatedAt: r.updated_at as Date,
        projectId: r.project_id as string,
        serverOnline: r.server_online as boolean,
        lastEndedAt: (r.last_ended_at as Date | null) ?? null,
      }));
    },

    /**
     * Backups still pending whose operation ended without the agent's result (failed by the
     * stuck sweep, or cancelled before the agent ran it) become failed with the operation's
     * message, so the backups trigger reports them (backup.failed) instead of leaving them
     * pending for ever. Ids of those it failed.
     */
    async failOrphaned(now: Date): Promise<string[]> {
      const { rows } = await pool.query<{ id: string }>(
        `update backups b set status = 'failed', completed_at = coalesce(d.completed_at, $1),
           error_message = coalesce(d.error_message, case when d.status = 'cancelled' then 'The backup was cancelled before it ran' else 'The backup operation ended without a result' end)
         from deployments d
         where d.id = b.deployment_id and b.status = 'pending' and b.backup_type <> 'pre_deploy' and d.kind = 'backup' and d.status in ('failed', 'cancelled')
         returning b.id`,
        [now],
      );
      return rows.map((r) => r.id);
    },

    /** Takes the slot if no one has (last_slot_at moves forward in one statement); whether this call took it. */
    async claimSlot(environmentId: string, slot: Date): Promise<boolean> {
      const { rowCount } = await pool.query(
        "update backup_schedules set last_slot_at = $2 where environment_id = $1 and enabled and (last_slot_at is null or last_slot_at < $2)",
        [environmentId, slot],
      );
      return rowCount === 1;
    },

    /** Gives a slot back (its backup could not be created), so a later pass tries again. */
    async releaseSlot(environmentId: string, slot: Date, previous: Date | null): Promise<void> {
      await db
        .update(backupSchedules)
        .set({ lastSlotAt: previous })
        .where(and(eq(backupSchedules.environmentId, environmentId), eq(backupSchedules.lastSlotAt, slot)));
    },

    /**
     * Reports a slot missed once: moves missed_slot_at forward, sets the environment's
     * last_backup (the red mark) and appends backup.missed to its organisation's events, in
     * one transaction. Whether this call reported it.
     */
    async markMissed(s: { environmentId: string; organizationId: string; projectId: string }, slot: Date, now: Date, reason: string): Promise<boolean> {
      return inTransaction(pool, async (client) => {
        const { rowCount } = await client.query(
          "update backup_schedules set missed_slot_at = $2 where environment_id = $1 and (missed_slot_at is null or missed_slot_at < $2)",
          [s.environmentId, slot],
        );
        if (rowCount !== 1) return false;
        const at = now.toISOString();
        await client.query("update environments set last_backup = $2::jsonb where id = $1", [
          s.environmentId,
          JSON.stringify({ status: "missed", at, error: reason, backup_id: null, backup_type: SCHEDULED, slot_at: slot.toISOString() }),
        ]);
        await appendOrgEvent(client, s.organizationId, "backup.missed", {
          environment_id: s.environmentId,
          project_id: s.projectId,
          slot_at: slot.toISOString(),
          reason,
          at,
          timestamp: at,
        });
        return true;
      });
    },

    /**
     * Completed scheduled backups of the environment (what the retention rule looks at), each
     * taken when its operation was requested (on the scheduler's clock, as its slot was).
     */
    async completedScheduled(environmentId: string): Promise<{ id: string; createdAt: Date; completedAt: Date | null }[]> {
      const { rows } = await pool.query<{ id: string; created_at: Date; completed_at: Date | null }>(
        `select b.id, coalesce(d.created_at, b.created_at) as created_at, b.completed_at
         from backups b left join deployments d on d.id = b.deployment_id
         where b.environment_id = $1 and b.backup_type = $2 and b.status = 'completed'`,
        [environmentId, SCHEDULED],
      );
      return rows.map((r) => ({ id: r.id, createdAt: r.created_at, completedAt: r.completed_at }));
    },

    /** Environments with a scheduled backup completed since their last retention pass, their rule and when the newest completed. */
    async awaitingRetention(): Promise<{ environmentId: string; organizationId: string; keepDaily: number; keepWeekly: number; keepMonthly: number; prunedThrough: Date | null; newest: Date }[]> {
      const { rows } = await pool.query<{ environment_id: string; organization_id: string; keep_daily: number; keep_weekly: number; keep_monthly: number; pruned_through: Date | null; newest: Date }>(
        `select s.environment_id, s.organization_id, s.keep_daily, s.keep_weekly, s.keep_monthly, s.pruned_through, b.newest from backup_schedules s
         cross join lateral (select max(completed_at) as newest from backups
                             where environment_id = s.environment_id and backup_type = $1 and status = 'completed') b
         where b.newest is not null and b.newest > coalesce(s.pruned_through, '-infinity'::timestamptz)`,
        [SCHEDULED],
      );
      return rows.map((r) => ({
        environmentId: r.environment_id,
        organizationId: r.organization_id,
        keepDaily: r.keep_daily,
        keepWeekly: r.keep_weekly,
        keepMonthly: r.keep_monthly,
        prunedThrough: r.pruned_through,
        newest: r.newest,
      }));
    },

    /** Takes the environment's retention pass up to `through` (one replica does it); whether this call took it. */
    async claimRetention(environmentId: string, previous: Date | null, through: Date): Promise<boolean> {
      const { rowCount } = await pool.query(
        "update backup_schedules set pruned_through = $3 where environment_id = $1 and pruned_through is not distinct from $2",
        [environmentId, previous, through],
      );
      return rowCount === 1;
    },

    /** Gives a retention pass back (a deletion failed), so a later pass tries again. */
    async releaseRetention(environmentId: string, through: Date, previous: Date | null): Promise<void> {
      await db
        .update(backupSchedules)
        .set({ prunedThrough: previous })
        .where(and(eq(backupSchedules.environmentId, environmentId), eq(backupSchedules.prunedThrough, through)));
    },
  };
}
export type BackupSchedulesRepo = ReturnType<typeof createBackupSchedulesRepo>;
