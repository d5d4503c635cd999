CREATE TABLE "environment_domains" (
	"name" text PRIMARY KEY NOT NULL,
	"environment_id" uuid NOT NULL
);
--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "aliases" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "routing" jsonb;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "proxy" jsonb;--> statement-breakpoint
ALTER TABLE "environment_domains" ADD CONSTRAINT "environment_domains_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "environment_domains_environment_idx" ON "environment_domains" USING btree ("environment_id");--> statement-breakpoint
-- Domains were stored as typed; the proxy routes lowercase names.
UPDATE "environments" SET "domain" = lower("domain") WHERE "domain" IS NOT NULL AND "domain" <> lower("domain");--> statement-breakpoint
-- The names active environments of live projects hold today. Before this table nothing kept
-- two environments from naming the same domain: the oldest keeps the name, a later one keeps
-- it in its row (shown, sent to its agent) until it is changed, and no one else can take it.
INSERT INTO "environment_domains" ("name", "environment_id")
SELECT e."domain", e."id" FROM "environments" e JOIN "projects" p ON p."id" = e."project_id"
WHERE e."is_active" AND p."deleted_at" IS NULL AND e."domain" IS NOT NULL
ORDER BY e."created_at", e."id"
ON CONFLICT ("name") DO NOTHING;
