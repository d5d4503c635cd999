// An environment's backup schedule as people and keys read and change it: daily by default
// (at a time spread over the night by the environment's id), kept 7 daily / 4 weekly / 3
// monthly, every field changeable; times are UTC. A schedule exists for every environment:
// one never changed reads as the defaults.
import type { Clock } from "../../lib/clock.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import { DEFAULT_RETENTION } from "./backup-retention.ts";
import { BACKUP_FREQUENCIES, defaultMinuteOfDay, nextSlot, type BackupFrequency } from "./backup-slots.ts";
import type { BackupScheduleRow, BackupScheduleSettings, BackupSchedulesRepo } from "./backup-schedules.repo.ts";

export const MAX_KEEP = { daily: 366, weekly: 260, monthly: 120 } as const;
export const TIME_PATTERN = "^([01][0-9]|2[0-3]):[0-5][0-9]$";
const TIME_RE = new RegExp(TIME_PATTERN);

export interface BackupScheduleInput {
  enabled?: boolean | undefined;
  frequency?: BackupFrequency | undefined;
  time?: string | undefined;
  weekday?: number | undefined;
  retention?: { daily?: number | undefined; weekly?: number | undefined; monthly?: number | undefined } | undefined;
}

const hhmm = (minute: number) => `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;

export function defaultSettings(environmentId: string): BackupScheduleSettings {
  return {
    enabled: true,
    frequency: "daily",
    minuteOfDay: defaultMinuteOfDay(environmentId),
    weekday: 7,
    keepDaily: DEFAULT_RETENTION.keepDaily,
    keepWeekly: DEFAULT_RETENTION.keepWeekly,
    keepMonthly: DEFAULT_RETENTION.keepMonthly,
  };
}

/** The settings after `input`, checked (backup_schedule_invalid). */
export function applyInput(current: BackupScheduleSettings, input: BackupScheduleInput): BackupScheduleSettings {
  if (input.frequency !== undefined && !BACKUP_FREQUENCIES.includes(input.frequency)) {
    throw new DomainError("backup_schedule_invalid", `frequency is one of ${BACKUP_FREQUENCIES.join(", ")}`);
  }
  if (input.time !== undefined && !TIME_RE.test(input.time)) {
    throw new DomainError("backup_schedule_invalid", `time is HH:MM in UTC, 00:00 to 23:59 (got ${JSON.stringify(input.time)})`);
  }
  if (input.weekday !== undefined && !(Number.isInteger(input.weekday) && input.weekday >= 1 && input.weekday <= 7)) {
    throw new DomainError("backup_schedule_invalid", "weekday is 1 (Monday) to 7 (Sunday)");
  }
  const r = input.retention ?? {};
  const keep = (v: number | undefined, max: number, name: string, was: number) => {
    if (v === undefined) return was;
    if (!Number.isInteger(v) || v < 0 || v > max) throw new DomainError("backup_schedule_invalid", `retention.${name} is a whole number from 0 to ${max}`);
    return v;
  };
  const next: BackupScheduleSettings = {
    enabled: input.enabled ?? current.enabled,
    frequency: input.frequency ?? current.frequency,
    minuteOfDay: input.time !== undefined ? Number(input.time.slice(0, 2)) * 60 + Number(input.time.slice(3)) : current.minuteOfDay,
    weekday: input.weekday ?? current.weekday,
    keepDaily: keep(r.daily, MAX_KEEP.daily, "daily", current.keepDaily),
    keepWeekly: keep(r.weekly, MAX_KEEP.weekly, "weekly", current.keepWeekly),
    keepMonthly: keep(r.monthly, MAX_KEEP.monthly, "monthly", current.keepMonthly),
  };
  if (next.keepDaily + next.keepWeekly + next.keepMonthly === 0) {
    throw new DomainError("backup_schedule_invalid", "A retention that keeps no backup would delete every scheduled backup; keep at least one (e.g. retention.daily 1), or turn the schedule off");
  }
  return next;
}

export function scheduleView(environmentId: string, s: BackupScheduleSettings, row: BackupScheduleRow | undefined, now: Date) {
  const frequency = s.frequency as BackupFrequency;
  return {
    environment_id: environmentId,
    enabled: s.enabled,
    frequency,
    time: hhmm(s.minuteOfDay),
    weekday: s.weekday,
    timezone: "UTC" as const,
    retention: { daily: s.keepDaily, weekly: s.keepWeekly, monthly: s.keepMonthly },
    next_run_at: s.enabled ? nextSlot({ frequency, minuteOfDay: s.minuteOfDay, weekday: s.weekday }, now).toISOString() : null,
    last_slot_at: row?.lastSlotAt?.toISOString() ?? null,
    is_default: row === undefined,
    updated_at: row?.updatedAt.toISOString() ?? null,
  };
}
export type BackupScheduleView = ReturnType<typeof scheduleView>;

const settingsOf = (row: BackupScheduleRow): BackupScheduleSettings => ({
  enabled: row.enabled,
  frequency: row.frequency,
  minuteOfDay: row.minuteOfDay,
  weekday: row.weekday,
  keepDaily: row.keepDaily,
  keepWeekly: row.keepWeekly,
  keepMonthly: row.keepMonthly,
});

export function createBackupSchedules(deps: { schedules: Pick<BackupSchedulesRepo, "get" | "upsert">; environments: Pick<EnvironmentsRepo, "get">; clock: Clock }) {
  async function environment(scope: Scope, environmentId: string) {
    const env = await deps.environments.get(scope, environmentId);
    if (!env) throw notFound("Environment");
    return env;
  }
  return {
    async get(scope: Scope, environmentId: string): Promise<BackupScheduleView> {
      const env = await environment(scope, environmentId);
      const row = await deps.schedules.get(env.id);
      return scheduleView(env.id, row ? settingsOf(row) : defaultSettings(env.id), row, deps.clock.now());
    },

    /** Changes the fields given; a change of timing counts slots from now on (none is caught up for the old timing). */
    async update(scope: Scope, environmentId: string, input: BackupScheduleInput): Promise<BackupScheduleView> {
      const env = await environment(scope, environmentId);
      const row = await deps.schedules.get(env.id);
      const current = row ? settingsOf(row) : defaultSettings(env.id);
      const next = applyInput(current, input);
      const timingChanged =
        next.frequency !== current.frequency || next.minuteOfDay !== current.minuteOfDay || next.weekday !== current.weekday || (next.enabled && !current.enabled);
      const now = deps.clock.now();
      const saved = await deps.schedules.upsert(env.organizationId, env.id, next, now, timingChanged);
      return scheduleView(env.id, next, saved, now);
    },
  };
}
export type BackupSchedules = ReturnType<typeof createBackupSchedules>;
