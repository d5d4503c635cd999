CREATE TABLE "backup_schedules" (
	"environment_id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"frequency" text DEFAULT 'daily' NOT NULL,
	"minute_of_day" integer NOT NULL,
	"weekday" integer DEFAULT 7 NOT NULL,
	"keep_daily" integer DEFAULT 7 NOT NULL,
	"keep_weekly" integer DEFAULT 4 NOT NULL,
	"keep_monthly" integer DEFAULT 3 NOT NULL,
	"active_since" timestamp (3) with time zone NOT NULL,
	"last_slot_at" timestamp (3) with time zone,
	"missed_slot_at" timestamp (3) with time zone,
	"pruned_through" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "last_backup" jsonb;--> statement-breakpoint
ALTER TABLE "backup_schedules" ADD CONSTRAINT "backup_schedules_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "backup_schedules" ADD CONSTRAINT "backup_schedules_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- A backup (manual or scheduled; pre-deploy snapshots are the deploy's own) that ends sets
-- its environment's last_backup, whichever code path ended it; a failed one is also a live
-- event of its organisation (backup.failed, fanned out to webhooks), so it is never silent.
CREATE FUNCTION berth_backup_finished() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  at text := to_char(coalesce(NEW.completed_at, clock_timestamp()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');
  project uuid;
BEGIN
  UPDATE environments SET last_backup = jsonb_build_object(
    'status', NEW.status, 'at', at, 'error', NEW.error_message, 'backup_id', NEW.id, 'backup_type', NEW.backup_type, 'slot_at', NULL)
  WHERE id = NEW.environment_id RETURNING project_id INTO project;
  IF NEW.status = 'failed' THEN
    INSERT INTO org_events (organization_id, type, data) VALUES (NEW.organization_id, 'backup.failed', jsonb_build_object(
      'environment_id', NEW.environment_id, 'project_id', project, 'backup_id', NEW.id, 'backup_type', NEW.backup_type,
      'reason', coalesce(NEW.error_message, 'failed'), 'at', at,
      'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
    PERFORM pg_notify('berth_org_events', NEW.organization_id::text);
  END IF;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER backups_finished AFTER UPDATE ON backups FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status AND NEW.status IN ('completed', 'failed') AND NEW.backup_type <> 'pre_deploy')
  EXECUTE FUNCTION berth_backup_finished();
