-- Every environment has a stage (modules/environments/stages.ts): per project the active
-- environment named production (any case), else the oldest active one, becomes production and
-- every other one staging; a project with only destroyed environments has none. At most one
-- production per project, destroyed ones included (a deploy brings them back).
ALTER TABLE "environments" ADD COLUMN "stage" text DEFAULT 'development' NOT NULL;--> statement-breakpoint
UPDATE "environments" e SET "stage" = CASE WHEN e."id" = (
  SELECT c."id" FROM "environments" c WHERE c."project_id" = e."project_id" AND c."is_active"
  ORDER BY lower(c."name") = 'production' DESC, c."created_at", c."id" LIMIT 1
) THEN 'production' ELSE 'staging' END;--> statement-breakpoint
CREATE UNIQUE INDEX "environments_project_production_key" ON "environments" USING btree ("project_id") WHERE "environments"."stage" = 'production';--> statement-breakpoint
ALTER TABLE "environments" ADD CONSTRAINT "environments_stage" CHECK ("environments"."stage" in ('production', 'staging', 'development'));