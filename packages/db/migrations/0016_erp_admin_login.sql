ALTER TABLE "environments" ADD COLUMN "admin_login_enc" text;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "admin_login_set_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "admin_login_applied_at" timestamp (3) with time zone;