ALTER TABLE "environments" ADD COLUMN "require_passing_tests" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "tests_result" jsonb;