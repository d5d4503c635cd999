// Neutralising a copy of an ERP database (ERP-FACTS.md; Odoo's own `odoo neutralize` runs the
// same from each module's data/neutralize.sql): outgoing and incoming mail servers and the
// scheduled actions are turned off (the ERP's autovacuum job excepted) and the database is
// flagged `database.is_neutralized`, so a test import never e-mails real customers or runs a
// payment job. Done on the restored copy before it is swapped in: it never runs un-neutralised.
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "../environment/database-swap.ts";

// One round trip: each UPDATE counts what it turned off into a temporary table, read last.
// PL/pgSQL plans a statement only when it runs, so a table the ERP does not have is skipped.
const NEUTRALIZE = `
CREATE TEMP TABLE berth_neutralized (what text PRIMARY KEY, n bigint NOT NULL DEFAULT 0);
DO $$
DECLARE n bigint := 0;
BEGIN
  IF to_regclass('public.ir_cron') IS NOT NULL THEN
    IF to_regclass('public.ir_model_data') IS NOT NULL THEN
      UPDATE ir_cron SET active = false WHERE active AND id NOT IN (
        SELECT res_id FROM ir_model_data WHERE model = 'ir.cron' AND module = 'base' AND name = 'autovacuum_job');
    ELSE
      UPDATE ir_cron SET active = false WHERE active;
    END IF;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO berth_neutralized VALUES ('crons', n);
  END IF;
  IF to_regclass('public.ir_mail_server') IS NOT NULL THEN
    UPDATE ir_mail_server SET active = false WHERE active;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO berth_neutralized VALUES ('outgoing', n);
  END IF;
  IF to_regclass('public.fetchmail_server') IS NOT NULL THEN
    UPDATE fetchmail_server SET active = false WHERE active;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO berth_neutralized VALUES ('incoming', n);
  END IF;
  IF to_regclass('public.ir_config_parameter') IS NOT NULL THEN
    UPDATE ir_config_parameter SET value = 'True' WHERE key = 'database.is_neutralized';
    IF NOT FOUND THEN INSERT INTO ir_config_parameter (key, value) VALUES ('database.is_neutralized', 'True'); END IF;
  END IF;
END $$;
SELECT coalesce((SELECT n FROM berth_neutralized WHERE what = 'crons'), 0) || ' ' ||
       coalesce((SELECT n FROM berth_neutralized WHERE what = 'outgoing'), 0) || ' ' ||
       coalesce((SELECT n FROM berth_neutralized WHERE what = 'incoming'), 0);`;

/** Neutralises `database`; returns a line saying what was turned off. */
export async function neutralizeDatabase(docker: DockerClient, dbContainerId: string, database: string): Promise<string> {
  const [counts = "0 0 0"] = await psql(docker, dbContainerId, NEUTRALIZE, { database, code: "restore_failed" });
  const [crons, outgoing, incoming] = counts.split(" ");
  return `Neutralised: ${crons} scheduled action(s) and ${outgoing} outgoing / ${incoming} incoming mail server(s) turned off (the autovacuum job kept), database.is_neutralized set`;
}
