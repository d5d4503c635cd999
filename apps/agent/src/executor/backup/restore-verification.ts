// What a restored database must show before it may replace the live one. pg_restore ran in
// one transaction and exited 0, so the restored tables are exactly the dump's; this reads
// them back. An Odoo database always has its module table, with at least `base` in it: when
// the dump has that table, its rows are counted and must not be none. A dump without it (not
// an Odoo database, such as the test images' stand-in ERP's) must at least have brought back
// one table. The one place to change what "restored" means.
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql } from "../environment/database-swap.ts";
import { CommandError } from "../runner/handler-types.ts";

export const RESTORE_VERIFICATION = {
  /** Counted when present: an Odoo database lists its modules here. */
  moduleTable: "ir_module_module",
  /** Fewer modules than this (when the table exists) fails the restore. */
  minModules: 1,
  /** Without the module table, fewer user tables than this fails the restore. */
  minTables: 1,
} as const;

/** Reads the restored database back; returns what was verified, throws restore_verification_failed. */
export async function verifyRestoredDatabase(docker: DockerClient, dbContainerId: string, database: string): Promise<string> {
  const fail = (why: string): never => {
    throw new CommandError("restore_verification_failed", `the restored database failed its check: ${why}; the live database was not touched`);
  };
  const query = (sql: string) => psql(docker, dbContainerId, sql, { database, code: "restore_verification_failed" });
  const [row = ""] = await query(
    "SELECT (SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')), " +
      `to_regclass('public.${RESTORE_VERIFICATION.moduleTable}') IS NOT NULL`,
  );
  const [tables = "0", hasModules = "f"] = row.split("|");
  if (hasModules === "t") {
    const [count = "0"] = await query(`SELECT count(*) FROM public.${RESTORE_VERIFICATION.moduleTable}`);
    if (Number(count) < RESTORE_VERIFICATION.minModules) fail(`${RESTORE_VERIFICATION.moduleTable} has ${count} rows`);
    return `Verified: ${count} modules in ${RESTORE_VERIFICATION.moduleTable} (${tables} tables)`;
  }
  if (Number(tables) < RESTORE_VERIFICATION.minTables) fail(`no table was restored (the dump holds none)`);
  return `Verified: ${tables} tables restored (the dump has no ${RESTORE_VERIFICATION.moduleTable} to count)`;
}
