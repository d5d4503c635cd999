CREATE TABLE "agent_streams" (
	"server_id" uuid PRIMARY KEY NOT NULL,
	"last_event_seq" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "agent_streams" ADD CONSTRAINT "agent_streams_server_id_servers_id_fk" FOREIGN KEY ("server_id") REFERENCES "public"."servers"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- Carry every server's watermark over before the column goes.
INSERT INTO "agent_streams" ("server_id", "last_event_seq") SELECT "id", "last_event_seq" FROM "servers" WHERE "last_event_seq" > 0;--> statement-breakpoint
ALTER TABLE "servers" DROP COLUMN "last_event_seq";