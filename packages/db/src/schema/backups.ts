// Backups of environments and their schedules (modules/backups).
import { bigint, boolean, index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { environments } from "./environments.ts";
import { organizations } from "./organizations.ts";

/** Backups an agent made of an environment (database dump + file store), with checksums. */
export const backups = pgTable(
  "backups",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    environmentId: uuid("environment_id").notNull().references(() => environments.id),
    /** The backup operation (a row of deployments, kind backup). */
    deploymentId: uuid("deployment_id").notNull(),
    backupType: text("backup_type").notNull().default("manual"),
    comment: text("comment"),
    /** pending | completed | failed */
    status: text("status").notNull().default("pending"),
    sizeBytes: bigint("size_bytes", { mode: "number" }),
    files: jsonb("files"),
    /** Where its files are kept off the server: null (only on the server: pre-deploy snapshots), local or s3 (the control plane's backup store). */
    storage: text("storage"),
    /** The key prefix of its files in that store. */
    storageKey: text("storage_key"),
    /** The files that arrived in the store intact, [{name, size, sha256}] (checked against what the agent declared). */
    storedFiles: jsonb("stored_files").notNull().default([]),
    errorMessage: text("error_message"),
    createdAt: ts("created_at").notNull().defaultNow(),
    completedAt: ts("completed_at"),
  },
  (t) => [index("backups_env_idx").on(t.environmentId, t.createdAt, t.id)],
);

/**
 * An environment's backup schedule and retention (one row once it is deployed; a missing
 * row means the defaults). The scheduler claims a slot by moving last_slot_at forward in one
 * statement, so a due backup is created once whatever the number of replicas.
 */
export const backupSchedules = pgTable("backup_schedules", {
  environmentId: uuid("environment_id")
    .primaryKey()
    .references(() => environments.id, { onDelete: "cascade" }),
  organizationId: uuid("organization_id").notNull().references(() => organizations.id),
  enabled: boolean("enabled").notNull().default(true),
  /** hourly | daily | weekly */
  frequency: text("frequency").notNull().default("daily"),
  /** Minutes after midnight UTC (hourly: only the minute of the hour counts). */
  minuteOfDay: integer("minute_of_day").notNull(),
  /** ISO weekday 1 (Monday) to 7 (Sunday), for weekly schedules. */
  weekday: integer("weekday").notNull().default(7),
  keepDaily: integer("keep_daily").notNull().default(7),
  keepWeekly: integer("keep_weekly").notNull().default(4),
  keepMonthly: integer("keep_monthly").notNull().default(3),
  /** Slots at or after this time count (set when the schedule starts or changes). */
  activeSince: ts("active_since").notNull(),
  /** The last slot a backup was created for. */
  lastSlotAt: ts("last_slot_at"),
  /** The last slot reported missed (backup.missed). */
  missedSlotAt: ts("missed_slot_at"),
  /** Completed scheduled backups up to this time have been through the retention rule. */
  prunedThrough: ts("pruned_through"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});
