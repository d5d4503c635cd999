-- Commands are kept sealed with the instance master key (agent_commands.sealed, written by the
-- control plane's agents/agent-commands.ts) beside their parameters as staff may see them
-- (shown_params: no secret, no signed link). `signed`, the command in clear, is what rows
-- written before this migration hold: read while such a command is still pending, emptied
-- here for every other one. A command is only ever sent while pending, so once it leaves
-- that state (accepted, or ended by whichever code path) its copy is erased by the trigger.
-- Retention deletes ended commands by age (created_at) unless an audit entry names them.
ALTER TABLE "agent_commands" ALTER COLUMN "signed" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_commands" ADD COLUMN "sealed" text;--> statement-breakpoint
ALTER TABLE "agent_commands" ADD COLUMN "shown_params" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "agent_commands_created_idx" ON "agent_commands" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "audit_log_command_idx" ON "audit_log" USING btree ("command_id") WHERE "audit_log"."command_id" is not null;
--> statement-breakpoint
UPDATE "agent_commands" SET "signed" = NULL WHERE "state" <> 'pending';--> statement-breakpoint
CREATE FUNCTION berth_agent_command_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.sealed := NULL;
  NEW.signed := NULL;
  RETURN NEW;
END $$;
--> statement-breakpoint
CREATE TRIGGER agent_commands_forget BEFORE UPDATE OF state ON agent_commands FOR EACH ROW
  WHEN (NEW.state <> 'pending' AND (NEW.sealed IS NOT NULL OR NEW.signed IS NOT NULL))
  EXECUTE FUNCTION berth_agent_command_forget();
