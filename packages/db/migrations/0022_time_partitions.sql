-- agent_events and deployment_logs become tables range-partitioned by month on their `ts`
-- (apps/control-plane/src/modules/retention/ keeps the months ahead and drops the expired ones).
--
-- Monthly, not daily: every read of these tables that names no time (a deployment's logs by
-- deployment_id, the event stream by organisation and tx) visits each partition, and 90 days
-- of logs are 4-5 monthly partitions against 90 daily ones (bench:retention measures the read).
--
-- Each table gets a DEFAULT partition, so an insert never fails: a line whose `ts` no partition
-- covers yet (an agent clock far off, a month the job has not made yet) lands there and is moved
-- into its month when berth_ensure_partition makes it.
--
-- agent_events: a primary key of a partitioned table must hold the partition key, so the old
-- PRIMARY KEY (server_id, seq) becomes a UNIQUE (server_id, seq) index on each partition. An
-- event an agent re-sends carries its own `ts` unchanged, so it lands in the partition that holds
-- it already and that index refuses it there; across partitions the per-server watermark
-- (agent_streams.last_event_seq, read and advanced under the stream's row lock) keeps every
-- re-send out before any insert (event-ingest.ts).
-- deployment_logs: PRIMARY KEY (id) becomes (id, ts); ids still come from the same sequence.
--
-- Large installations: the rows are copied into the new tables inside this migration (the
-- control plane starts once it is done). Measured on the embedded PostgreSQL 17 of
-- bench:retention (2 cores, shared, default settings): about 6 s per million deployment_logs rows,
-- indexes included. Partitions are made for the months that hold rows (within the last 24
-- months) and for this month and the next two; older rows (and rows dated ahead) go to the
-- DEFAULT partition, where the retention job deletes the expired ones in chunks.
CREATE FUNCTION berth_ensure_partition(parent regclass, month_start timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
-- Makes the month's partition of `parent` (named <parent>_pYYYYMM, UTC months) unless it exists:
-- built on its own, filled with the DEFAULT partition's rows of that month, then attached (an
-- ATTACH takes a lighter lock on the parent than CREATE TABLE ... PARTITION OF, so writers go on).
DECLARE
  lo timestamptz := date_trunc('month', month_start AT TIME ZONE 'UTC') AT TIME ZONE 'UTC';
  hi timestamptz := (date_trunc('month', month_start AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
  part text := parent::text || '_p' || to_char(lo AT TIME ZONE 'UTC', 'YYYYMM');
  def text := parent::text || '_default';
  key text;
BEGIN
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  SELECT a.attname INTO key FROM pg_partitioned_table p JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
  WHERE p.partrelid = parent;
  EXECUTE format('CREATE TABLE %I (LIKE %s INCLUDING DEFAULTS)', part, parent);
  -- Proves the range to ATTACH, which then skips scanning the new table.
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', part, part || '_range', key, lo, key, hi);
  IF to_regclass(def) IS NOT NULL THEN
    -- No insert may reach the DEFAULT partition's rows of that month until the ATTACH.
    EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', def);
    EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING *) INSERT INTO %I SELECT * FROM moved', def, key, lo, key, hi, part);
  END IF;
  IF parent = 'agent_events'::regclass THEN
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (server_id, seq)', part || '_server_seq_key', part);
  END IF;
  EXECUTE format('ALTER TABLE %s ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, part, lo, hi);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
  RETURN true;
END $$;
--> statement-breakpoint
ALTER TABLE "agent_events" RENAME TO "agent_events_unpartitioned";--> statement-breakpoint
ALTER TABLE "agent_events_unpartitioned" DROP CONSTRAINT "agent_events_server_id_seq_pk";--> statement-breakpoint
DROP INDEX "agent_events_deployment_idx";--> statement-breakpoint
CREATE TABLE "agent_events" (
	"server_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"kind" text NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"command_id" uuid,
	"deployment_id" uuid,
	"level" text,
	"body" jsonb NOT NULL,
	"received_at" timestamp (3) with time zone DEFAULT now() NOT NULL
) PARTITION BY RANGE ("ts");--> statement-breakpoint
CREATE TABLE "agent_events_default" PARTITION OF "agent_events" DEFAULT;--> statement-breakpoint
CREATE UNIQUE INDEX "agent_events_default_server_seq_key" ON "agent_events_default" ("server_id", "seq");--> statement-breakpoint
SELECT berth_ensure_partition('agent_events', m AT TIME ZONE 'UTC') FROM (
  SELECT DISTINCT date_trunc('month', ts AT TIME ZONE 'UTC') AS m FROM agent_events_unpartitioned
  WHERE ts >= now() - interval '24 months' AND ts < now() + interval '3 months'
  UNION SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'), date_trunc('month', (now() + interval '2 months') AT TIME ZONE 'UTC'), interval '1 month')
) months ORDER BY m;--> statement-breakpoint
INSERT INTO "agent_events" ("server_id", "seq", "kind", "ts", "command_id", "deployment_id", "level", "body", "received_at")
  SELECT "server_id", "seq", "kind", "ts", "command_id", "deployment_id", "level", "body", "received_at" FROM "agent_events_unpartitioned";--> statement-breakpoint
DROP TABLE "agent_events_unpartitioned";--> statement-breakpoint
CREATE INDEX "agent_events_deployment_idx" ON "agent_events" USING btree ("deployment_id","seq") WHERE "agent_events"."deployment_id" is not null;--> statement-breakpoint
ALTER TABLE "deployment_logs" RENAME TO "deployment_logs_unpartitioned";--> statement-breakpoint
ALTER TABLE "deployment_logs_unpartitioned" DROP CONSTRAINT "deployment_logs_pkey";--> statement-breakpoint
DROP INDEX "deployment_logs_deployment_idx";--> statement-breakpoint
DROP INDEX "deployment_logs_org_tx_idx";--> statement-breakpoint
CREATE TABLE "deployment_logs" (
	"id" bigint DEFAULT nextval('deployment_logs_id_seq'::regclass) NOT NULL,
	"organization_id" uuid NOT NULL,
	"deployment_id" uuid NOT NULL,
	"ts" timestamp (3) with time zone NOT NULL,
	"level" text NOT NULL,
	"message" text NOT NULL,
	"step" text,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"tx" "xid8" DEFAULT pg_current_xact_id() NOT NULL
) PARTITION BY RANGE ("ts");--> statement-breakpoint
ALTER SEQUENCE "deployment_logs_id_seq" OWNED BY "deployment_logs"."id";--> statement-breakpoint
CREATE TABLE "deployment_logs_default" PARTITION OF "deployment_logs" DEFAULT;--> statement-breakpoint
SELECT berth_ensure_partition('deployment_logs', m AT TIME ZONE 'UTC') FROM (
  SELECT DISTINCT date_trunc('month', ts AT TIME ZONE 'UTC') AS m FROM deployment_logs_unpartitioned
  WHERE ts >= now() - interval '24 months' AND ts < now() + interval '3 months'
  UNION SELECT generate_series(date_trunc('month', now() AT TIME ZONE 'UTC'), date_trunc('month', (now() + interval '2 months') AT TIME ZONE 'UTC'), interval '1 month')
) months ORDER BY m;--> statement-breakpoint
INSERT INTO "deployment_logs" ("id", "organization_id", "deployment_id", "ts", "level", "message", "step", "data", "tx")
  SELECT "id", "organization_id", "deployment_id", "ts", "level", "message", "step", "data", "tx" FROM "deployment_logs_unpartitioned";--> statement-breakpoint
DROP TABLE "deployment_logs_unpartitioned";--> statement-breakpoint
ALTER TABLE "deployment_logs" ADD CONSTRAINT "deployment_logs_id_ts_pk" PRIMARY KEY ("id", "ts");--> statement-breakpoint
CREATE INDEX "deployment_logs_deployment_idx" ON "deployment_logs" USING btree ("deployment_id","id");--> statement-breakpoint
CREATE INDEX "deployment_logs_org_tx_idx" ON "deployment_logs" USING btree ("organization_id","tx","id");
