-- Commands are announced by the control plane right after their insert commits, on a
-- connection that does not wait for the WAL flush (apps/control-plane agent-commands.ts).
-- A NOTIFY inside the insert's transaction made every command's commit take PostgreSQL's
-- database-wide notification lock through its WAL flush, so concurrent commands queued
-- behind each other's flushes instead of sharing them.
DROP TRIGGER agent_commands_notify ON agent_commands;
--> statement-breakpoint
DROP FUNCTION berth_agent_command_notify();
