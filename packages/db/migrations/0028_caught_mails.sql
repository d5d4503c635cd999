CREATE TABLE "caught_mails" (
	"id" uuid PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"environment_id" uuid NOT NULL,
	"received_at" timestamp (3) with time zone NOT NULL,
	"from" text NOT NULL,
	"to" text[] NOT NULL,
	"subject" text NOT NULL,
	"size" integer NOT NULL,
	"html" text,
	"text" text,
	"truncated" boolean NOT NULL,
	"headers" jsonb NOT NULL,
	"attachments" jsonb NOT NULL
);
--> statement-breakpoint
ALTER TABLE "caught_mails" ADD CONSTRAINT "caught_mails_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "caught_mails" ADD CONSTRAINT "caught_mails_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "caught_mails_environment_idx" ON "caught_mails" USING btree ("environment_id","received_at","id");