ALTER TABLE "deployments" ADD COLUMN "modules_result" jsonb;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "admin_passwd_enc" text;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "admin_passwd_set_at" timestamp (3) with time zone;