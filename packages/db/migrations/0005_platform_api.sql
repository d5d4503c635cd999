CREATE TABLE "audit_log" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"actor_user_id" uuid,
	"action" text NOT NULL,
	"target_type" text NOT NULL,
	"target_id" text NOT NULL,
	"reason" text,
	"command_id" uuid,
	"deployment_id" uuid,
	"result" jsonb,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "deployment_logs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"deployment_id" uuid NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"step" text,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"tx" "xid8" DEFAULT pg_current_xact_id() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "environment_addons" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"environment_id" uuid NOT NULL,
	"name" text NOT NULL,
	"git_url" text NOT NULL,
	"branch" text NOT NULL,
	"auto_deploy" boolean DEFAULT true NOT NULL,
	"is_active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "git_hook_deliveries" (
	"git_host" text NOT NULL,
	"delivery_id" text NOT NULL,
	"project_id" uuid NOT NULL,
	"deployment_ids" uuid[] NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "git_hook_deliveries_git_host_delivery_id_project_id_pk" PRIMARY KEY("git_host","delivery_id","project_id")
);
--> statement-breakpoint
CREATE TABLE "org_events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"organization_id" uuid NOT NULL,
	"type" text NOT NULL,
	"data" jsonb NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"tx" "xid8" DEFAULT pg_current_xact_id() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sessions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"user_agent" text,
	"ip" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp (3) with time zone,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"revoked_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"organization_id" uuid NOT NULL,
	"subscription_id" uuid NOT NULL,
	"event_id" text NOT NULL,
	"event_type" text NOT NULL,
	"payload" jsonb NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"response_status" integer,
	"response_body" text,
	"error" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"last_attempt_at" timestamp (3) with time zone,
	"delivered_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "projects" ADD COLUMN "git_hook_secret_enc" text;--> statement-breakpoint
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_actor_user_id_users_id_fk" FOREIGN KEY ("actor_user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD CONSTRAINT "environment_addons_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "environment_addons" ADD CONSTRAINT "environment_addons_environment_id_environments_id_fk" FOREIGN KEY ("environment_id") REFERENCES "public"."environments"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "git_hook_deliveries" ADD CONSTRAINT "git_hook_deliveries_project_id_projects_id_fk" FOREIGN KEY ("project_id") REFERENCES "public"."projects"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_subscription_id_webhook_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."webhook_subscriptions"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "audit_log_org_idx" ON "audit_log" USING btree ("organization_id","created_at","id");--> statement-breakpoint
CREATE INDEX "deployment_logs_deployment_idx" ON "deployment_logs" USING btree ("deployment_id","id");--> statement-breakpoint
CREATE INDEX "deployment_logs_org_tx_idx" ON "deployment_logs" USING btree ("organization_id","tx","id");--> statement-breakpoint
CREATE INDEX "environment_addons_env_idx" ON "environment_addons" USING btree ("environment_id");--> statement-breakpoint
CREATE INDEX "org_events_org_tx_idx" ON "org_events" USING btree ("organization_id","tx","id");--> statement-breakpoint
CREATE INDEX "org_events_created_idx" ON "org_events" USING btree ("created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "sessions_token_hash_key" ON "sessions" USING btree ("token_hash");--> statement-breakpoint
CREATE INDEX "sessions_user_idx" ON "sessions" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "webhook_deliveries_event_key" ON "webhook_deliveries" USING btree ("subscription_id","event_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_sub_idx" ON "webhook_deliveries" USING btree ("subscription_id","created_at","id");--> statement-breakpoint
-- Every change of an operation's status or step, and of an environment's status, becomes a
-- live event of its organisation, whichever code path made it (API, agent events, sweeps).
CREATE FUNCTION berth_deployment_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO org_events (organization_id, type, data) VALUES (NEW.organization_id, 'deployment.status', jsonb_build_object(
    'deployment_id', NEW.id, 'project_id', NEW.project_id, 'environment_id', NEW.environment_id, 'kind', NEW.kind,
    'version', NEW.version, 'trigger', NEW.trigger, 'status', NEW.status,
    'previous_status', CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END,
    'progress_percent', NEW.progress_percent, 'current_step', NEW.current_step, 'error_message', NEW.error_message,
    'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
  PERFORM pg_notify('berth_org_events', NEW.organization_id::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER deployments_inserted_event AFTER INSERT ON deployments FOR EACH ROW EXECUTE FUNCTION berth_deployment_event();
--> statement-breakpoint
CREATE TRIGGER deployments_changed_event AFTER UPDATE ON deployments FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.current_step IS DISTINCT FROM NEW.current_step)
  EXECUTE FUNCTION berth_deployment_event();
--> statement-breakpoint
CREATE FUNCTION berth_environment_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO org_events (organization_id, type, data) VALUES (NEW.organization_id, 'environment.status', jsonb_build_object(
    'environment_id', NEW.id, 'project_id', NEW.project_id, 'status', NEW.status, 'previous_status', OLD.status,
    'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
  PERFORM pg_notify('berth_org_events', NEW.organization_id::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER environments_status_event AFTER UPDATE ON environments FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION berth_environment_event();
