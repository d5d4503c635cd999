// What a restored database must show before it may replace the live one. pg_restore ran in
// one transaction and exited 0, so the restored tables are exactly the dump's; this reads
// them back. It must be an ERP database Odoo would serve: its module table (Odoo's own test of
// an initialised database, odoo/modules/db.py is_initialized) with `base` installed. Any
// other dump, however many tables it brought, is refused (Odoo would answer "Database not
// initialized" on every request). The one place to change what "restored" means.
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "../environment/psql.ts";
import { CommandError } from "../runner/handler-types.ts";

export const RESTORE_VERIFICATION = {
  /** An Odoo database lists its modules here. */
  moduleTable: "ir_module_module",
  /** The module every initialised Odoo database has installed. */
  baseModule: "base",
} as const;

/** Reads the restored database back; returns what was verified, throws restore_verification_failed. */
export async function verifyRestoredDatabase(docker: DockerClient, dbContainerId: string, database: string): Promise<string> {
  const fail = (why: string): never => {
    throw new CommandError("restore_verification_failed", `the restored database failed its check: ${why}; the live database was not touched`);
  };
  const query = (sql: string) => psql(docker, dbContainerId, sql, { database, code: "restore_verification_failed" });
  const { moduleTable, baseModule } = RESTORE_VERIFICATION;
  const [row = ""] = await query(
    "SELECT (SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')), " +
      `to_regclass('public.${moduleTable}') IS NOT NULL`,
  );
  const [tables = "0", hasModules = "f"] = row.split("|");
  if (hasModules !== "t") fail(`it is not an ERP database: no ${moduleTable} among its ${tables} tables`);
  const [counts = ""] = await query(`SELECT count(*) || '|' || count(*) FILTER (WHERE name = '${baseModule}' AND state = 'installed') FROM public.${moduleTable}`);
  const [count = "0", base = "0"] = counts.split("|");
  if (base === "0") fail(`${moduleTable} has ${count} rows but no installed ${baseModule}: the ERP was never initialised in it`);
  return `Verified: ${count} modules in ${moduleTable}, ${baseModule} installed (${tables} tables)`;
}
