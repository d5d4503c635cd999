ALTER TABLE "deployments" ADD COLUMN "idempotency_scope" text;--> statement-breakpoint
ALTER TABLE "deployments" ADD COLUMN "idempotency_key" text;--> statement-breakpoint
CREATE INDEX "deployments_idempotency_idx" ON "deployments" USING btree ("idempotency_scope","idempotency_key") WHERE "deployments"."idempotency_key" is not null;