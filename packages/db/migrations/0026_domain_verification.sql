-- Domain claims are proven before they are held against others (modules/environments/
-- domain-verification.ts): a name may have several pending claims (one per organisation),
-- at most one verified. Claims made before this migration start pending: the verification
-- job proves those whose DNS points at their server or carries their TXT token.
DROP INDEX "environment_domains_environment_idx";--> statement-breakpoint
ALTER TABLE "environment_domains" DROP CONSTRAINT "environment_domains_pkey";--> statement-breakpoint
ALTER TABLE "environment_domains" ADD CONSTRAINT "environment_domains_environment_id_name_pk" PRIMARY KEY("environment_id","name");--> statement-breakpoint
ALTER TABLE "environment_domains" ADD COLUMN "organization_id" uuid;--> statement-breakpoint
UPDATE "environment_domains" d SET "organization_id" = e."organization_id" FROM "environments" e WHERE e."id" = d."environment_id";--> statement-breakpoint
ALTER TABLE "environment_domains" ALTER COLUMN "organization_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD COLUMN "status" text DEFAULT 'pending' NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD COLUMN "token" text DEFAULT replace(gen_random_uuid()::text, '-', '') NOT NULL;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD COLUMN "checked_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD COLUMN "verified_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD CONSTRAINT "environment_domains_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "environment_domains_name_idx" ON "environment_domains" USING btree ("name");--> statement-breakpoint
CREATE UNIQUE INDEX "environment_domains_verified_name_key" ON "environment_domains" USING btree ("name") WHERE "environment_domains"."status" = 'verified';--> statement-breakpoint
CREATE UNIQUE INDEX "environment_domains_org_name_key" ON "environment_domains" USING btree ("organization_id","name") WHERE "environment_domains"."status" <> 'released';
