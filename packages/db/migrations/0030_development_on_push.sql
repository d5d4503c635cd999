ALTER TABLE "projects" ADD COLUMN "development_server_id" uuid;--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "development_limit" integer DEFAULT 3 NOT NULL;--> statement-breakpoint
ALTER TABLE "environments" ADD COLUMN "refresh_on_push" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_development_server_id_servers_id_fk" FOREIGN KEY ("development_server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "projects" ADD CONSTRAINT "projects_development_limit" CHECK ("projects"."development_limit" between 1 and 20);