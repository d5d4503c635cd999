-- A new command announces itself (payload server_id:command_id, delivered at commit), so
-- writing a command and waking the replica that holds its agent take one statement
-- however the row was written. The issuing replica, when it holds the agent, has already
-- sent the command and skips the announcement by its id.
CREATE FUNCTION berth_agent_command_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('berth_agent_commands', NEW.server_id::text || ':' || NEW.command_id::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER agent_commands_notify AFTER INSERT ON agent_commands FOR EACH ROW EXECUTE FUNCTION berth_agent_command_notify();
