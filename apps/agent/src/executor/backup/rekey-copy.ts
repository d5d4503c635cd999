// A copy of a database gets its own identity before it serves, as Odoo's own restore "as a
// copy" gives it (odoo/service/db.py restore_db: `env['ir.config_parameter'].init(force=True)`,
// odoo/addons/base/models/ir_config_parameter.py `_default_parameters`): a new
// database.secret (it signs sessions and tokens) and database.uuid (the IAP and publisher
// identity), a new database.create_date, web.base.url set to the copy's own address, the login
// cool-down defaults. A copy that kept production's uuid and secret would collide with it:
// IAP credits, the publisher warranty contract, sessions signed for one valid on the other.
import { randomUUID } from "node:crypto";
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "../environment/psql.ts";

/** Odoo's default when nothing better is known (ir_config_parameter.py: http://localhost:<http_port>). */
export const DEFAULT_BASE_URL = "http://localhost:8069";

/** SQL literal of a string Berth made (a uuid, a URL it checked); quotes doubled all the same. */
const literal = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** Re-keys `database` (skipped when it has no ir_config_parameter); returns what was done. */
export async function rekeyCopy(docker: DockerClient, dbContainerId: string, database: string, baseUrl: string | null): Promise<string> {
  const url = baseUrl ?? DEFAULT_BASE_URL;
  if (!/^https?:\/\/[^\s'"\\]+$/.test(url)) throw new Error(`refusing "${url}" as web.base.url`);
  const params: [string, string][] = [
    ["database.secret", randomUUID()],
    ["database.uuid", randomUUID()],
    ["web.base.url", url],
    ["base.login_cooldown_after", "10"],
    ["base.login_cooldown_duration", "60"],
  ];
  const values = [...params.map(([k, v]) => `(${literal(k)}, ${literal(v)})`), `('database.create_date', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'))`];
  // PL/pgSQL plans a statement only when it runs: a database without the table is left alone.
  // Odoo's ir_config_parameter has a unique key (its _sql_constraints key_uniq).
  const sql = `DO $$
BEGIN
  IF to_regclass('public.ir_config_parameter') IS NULL THEN RETURN; END IF;
  INSERT INTO ir_config_parameter (key, value) VALUES ${values.join(", ")} ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
END $$;
SELECT to_regclass('public.ir_config_parameter') IS NOT NULL;`;
  const [present] = await psql(docker, dbContainerId, sql, { database, code: "restore_failed" });
  return present === "t"
    ? `Re-keyed as a copy: new database.uuid and database.secret, web.base.url ${url}`
    : "Not re-keyed: the database has no ir_config_parameter";
}
