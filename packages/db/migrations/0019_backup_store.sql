ALTER TABLE "backups" ADD COLUMN "storage" text;--> statement-breakpoint
ALTER TABLE "backups" ADD COLUMN "storage_key" text;--> statement-breakpoint
ALTER TABLE "backups" ADD COLUMN "stored_files" jsonb DEFAULT '[]'::jsonb NOT NULL;