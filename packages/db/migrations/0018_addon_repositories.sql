ALTER TABLE "environment_addons" ALTER COLUMN "organization_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ALTER COLUMN "environment_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "level" text DEFAULT 'environment' NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "pinned_commit" text;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "submodules" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "sub_paths" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "access" text DEFAULT 'public' NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "deploy_key_public" text;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "secret_enc" text;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD COLUMN "updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE INDEX "environment_addons_org_idx" ON "environment_addons" USING btree ("organization_id");--> statement-breakpoint
ALTER TABLE "environment_addons" ADD CONSTRAINT "environment_addons_level_scope" CHECK (("environment_addons"."level" = 'platform' and "environment_addons"."organization_id" is null and "environment_addons"."environment_id" is null) or ("environment_addons"."level" = 'organization' and "environment_addons"."organization_id" is not null and "environment_addons"."environment_id" is null) or ("environment_addons"."level" = 'environment' and "environment_addons"."organization_id" is not null and "environment_addons"."environment_id" is not null));