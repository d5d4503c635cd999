-- A server going online, offline (or being added) becomes a live event of its organisation,
-- so dashboards see an agent connect without polling. Only a change of status counts:
-- last_seen_at moves on every heartbeat and must not flood the stream.
CREATE FUNCTION berth_server_status_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO org_events (organization_id, type, data) VALUES (NEW.organization_id, 'server.status', jsonb_build_object(
    'server_id', NEW.id, 'status', NEW.status,
    'previous_status', CASE WHEN TG_OP = 'UPDATE' THEN OLD.status END,
    'timestamp', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
  PERFORM pg_notify('berth_org_events', NEW.organization_id::text);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER servers_inserted_event AFTER INSERT ON servers FOR EACH ROW EXECUTE FUNCTION berth_server_status_event();
--> statement-breakpoint
CREATE TRIGGER servers_status_event AFTER UPDATE ON servers FOR EACH ROW
  WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION berth_server_status_event();
--> statement-breakpoint
-- The dashboard's per-server history chart reads one server's recent figures.
CREATE INDEX org_events_server_stats_idx ON org_events ((data->>'server_id'), created_at) WHERE type = 'server.stats';
