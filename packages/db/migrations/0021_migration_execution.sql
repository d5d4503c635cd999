ALTER TABLE "migrations" ADD COLUMN "production" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "migrations" ADD COLUMN "project_id" uuid;--> statement-breakpoint
ALTER TABLE "migrations" ADD COLUMN "deployment_id" uuid;--> statement-breakpoint
ALTER TABLE "migrations" ADD COLUMN "steps" jsonb;