CREATE TABLE "agent_commands" (
	"command_id" uuid PRIMARY KEY NOT NULL,
	"server_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"type" text NOT NULL,
	"signed" jsonb NOT NULL,
	"issued_by" text NOT NULL,
	"deployment_id" uuid,
	"state" text DEFAULT 'pending' NOT NULL,
	"rejection_code" text,
	"result" jsonb,
	"error" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"sent_at" timestamp (3) with time zone,
	"accepted_at" timestamp (3) with time zone,
	"completed_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "agent_events" (
	"server_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"command_id" uuid,
	"deployment_id" uuid,
	"level" text,
	"body" jsonb NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "agent_events_server_id_seq_pk" PRIMARY KEY("server_id","seq")
);
--> statement-breakpoint
CREATE TABLE "agent_sessions" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"replica_id" text NOT NULL,
	"connection_id" text NOT NULL,
	"connected_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "enrollment_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"server_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"created_by" text,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp (3) with time zone NOT NULL,
	"used_at" timestamp (3) with time zone
);
--> statement-breakpoint
CREATE TABLE "server_stats" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"sampled_at" timestamp (3) with time zone NOT NULL,
	"cpu_percent" double precision NOT NULL,
	"ram_used_mb" integer NOT NULL,
	"ram_total_mb" integer NOT NULL,
	"disk_used_gb" double precision NOT NULL,
	"disk_total_gb" double precision NOT NULL,
	"load1" double precision NOT NULL,
	"load5" double precision NOT NULL,
	"load15" double precision NOT NULL,
	"containers_running" integer NOT NULL,
	"containers_total" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "signing_keys" (
	"key_id" text PRIMARY KEY NOT NULL,
	"public_key" text NOT NULL,
	"private_key_enc" text NOT NULL,
	"state" text NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"retired_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "agent_public_key" text;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "agent_version" text;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "os" text;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "arch" text;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "docker_version" text;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "enrolled_at" timestamp (3) with time zone;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "last_command_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "servers" ADD COLUMN "last_event_seq" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_commands" ADD CONSTRAINT "agent_commands_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "agent_sessions" ADD CONSTRAINT "agent_sessions_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "enrollment_tokens" ADD CONSTRAINT "enrollment_tokens_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "server_stats" ADD CONSTRAINT "server_stats_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "agent_commands_server_seq_key" ON "agent_commands" USING btree ("server_id","seq");--> statement-breakpoint
CREATE INDEX "agent_commands_pending_idx" ON "agent_commands" USING btree ("server_id","seq") WHERE "agent_commands"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "agent_events_deployment_idx" ON "agent_events" USING btree ("deployment_id","seq");--> statement-breakpoint
CREATE UNIQUE INDEX "enrollment_tokens_hash_key" ON "enrollment_tokens" USING btree ("token_hash");