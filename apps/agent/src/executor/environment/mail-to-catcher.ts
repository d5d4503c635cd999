// A staging or development ERP sends its mail to the server's mail catcher: odoo.conf's smtp
// settings, as the environment's deploy writes them (deploy/erp-config.ts). Odoo uses odoo.conf's
// settings only when no ir.mail_server record is active (odoo/addons/base/models/ir_mail_server.py:
// IrMailServer._find_mail_server takes any active record first, even one set for another domain).
// A production database copied in keeps the customer's servers, and `odoo neutralize`
// (odoo/addons/base/data/neutralize.sql) deactivates them but adds an active dummy one
// ("neutralization - disable emails", host "invalid") so that mail fails. So every server is
// turned off, the dummy included: after a copy into such an environment (backup/neutralize.ts),
// and at each of its deploys (a server a user added since). Its mail is caught, not sent, not lost.
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "./psql.ts";

/** Deactivates every mail server of `database` (a database without ir_mail_server has none); returns what was done. */
export async function mailToCatcher(docker: DockerClient, dbContainerId: string, database: string): Promise<string> {
  const [present] = await psql(docker, dbContainerId, "SELECT to_regclass('public.ir_mail_server') IS NOT NULL", { database, code: "database_failed" });
  if (present !== "t") return "No outgoing mail server in the database: its mail goes to this server's mail catcher";
  const [count = "0"] = await psql(docker, dbContainerId, "WITH off AS (UPDATE ir_mail_server SET active = false WHERE active RETURNING 1) SELECT count(*) FROM off", {
    database,
    code: "database_failed",
  });
  return `Outgoing mail servers turned off: ${count}; its mail goes to this server's mail catcher`;
}
