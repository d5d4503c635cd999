// The role a dump is loaded as. ERP_DB_USER ("odoo") is the image's POSTGRES_USER, a
// superuser: a dump loaded as it could run `COPY ... TO PROGRAM` (a shell in the database
// container) or LANGUAGE plpython3u. A restore's dump is loaded by a role of its own, made for
// that one load: LOGIN and nothing else (not a superuser, no CREATEDB / CREATEROLE /
// REPLICATION / BYPASSRLS, a member of no role), the owner of the restore's new database and
// of nothing else. The ERP's own extensions (pg_trgm, unaccent) are trusted from PostgreSQL 13,
// so a database owner creates them; on older servers the superuser creates them first and
// hands them to the role. Afterwards the superuser takes everything back (REASSIGN OWNED BY),
// the database is "odoo"'s again and the role is dropped, on failure too; a role left by a
// crash is dropped by the interrupted-restore recovery (dropLeftoverLoaders).
import type { DockerClient } from "../../docker/docker-client.ts";
import { psql, serverMajor } from "./psql.ts";
import { ERP_DB_USER } from "./environment-layout.ts";

export const LOADER_ROLE_PREFIX = "berth_loader_";
const LOADER = new RegExp(`^${LOADER_ROLE_PREFIX}[a-z0-9]{1,32}$`);
const RESTORE_DB = /^[a-z]+_restore_([a-z0-9]{1,32})$/;
/** The OS user psql and pg_restore run as in the database container (nobody), never root. */
export const LOADER_OS_USER = "65534:65534";
/** Extensions the ERP uses that are not trusted before PostgreSQL 13. */
const ERP_EXTENSIONS = ["pg_trgm", "unaccent"];

/** The loader role of a restore database (odoo_restore_<id> → berth_loader_<id>). */
export function loaderRoleFor(database: string): string {
  const m = RESTORE_DB.exec(database);
  if (m === null) throw new Error(`refusing to load into "${database}": not a restore database`);
  return `${LOADER_ROLE_PREFIX}${m[1]!}`;
}

/**
 * Runs `load` with a new loader role owning `database` (a restore database, made empty by
 * createDatabase), then gives everything back to ERP_DB_USER and drops the role, whatever
 * `load` did.
 */
export async function withLoaderRole<T>(
  docker: DockerClient,
  dbContainerId: string,
  database: string,
  load: (role: string) => Promise<T>,
  /** The server's major when the caller has read it already (serverMajor). */
  knownMajor?: number,
): Promise<T> {
  const role = loaderRoleFor(database);
  const major = knownMajor ?? (await serverMajor(docker, dbContainerId));
  const su = (sql: string, db = "postgres") => psql(docker, dbContainerId, sql, { database: db, code: "restore_failed" });
  await dropLoader(docker, dbContainerId, role, [database]);
  await su(`CREATE ROLE "${role}" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS CONNECTION LIMIT 4`);
  try {
    await su(`ALTER DATABASE "${database}" OWNER TO "${role}"`);
    if (major !== undefined && major < 13) {
      // Before trusted extensions: made here, then the role's, so the dump's COMMENT ON EXTENSION works.
      for (const ext of ERP_EXTENSIONS) {
        await su(`CREATE EXTENSION IF NOT EXISTS ${ext} WITH SCHEMA public`, database).catch(() => undefined);
      }
      await su(`UPDATE pg_catalog.pg_extension SET extowner = '"${role}"'::regrole WHERE extname IN ('pg_trgm', 'unaccent')`, database);
    }
    return await load(role);
  } finally {
    await dropLoader(docker, dbContainerId, role, [database]);
  }
}

/** Gives what `role` owns in `databases` to ERP_DB_USER, the databases too, and drops the role; gone already is success. */
export async function dropLoader(docker: DockerClient, dbContainerId: string, role: string, databases: string[]): Promise<void> {
  if (!LOADER.test(role)) throw new Error(`refusing to drop role "${role}"`);
  const su = (sql: string, db = "postgres") => psql(docker, dbContainerId, sql, { database: db, code: "restore_failed" });
  const [exists] = await su(`SELECT 1 FROM pg_roles WHERE rolname = '${role}'`);
  if (exists === undefined) return;
  // Its sessions first: a psql still loading would keep the role in use.
  await su(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '${role}'`);
  const present = new Set(await su("SELECT datname FROM pg_database WHERE datallowconn"));
  for (const db of databases.filter((d) => present.has(d))) {
    await su(`REASSIGN OWNED BY "${role}" TO ${ERP_DB_USER}; DROP OWNED BY "${role}"`, db);
  }
  await su(`DROP ROLE "${role}"`);
}

/** Loader roles left by a load that never finished (an agent crash): their databases are gone or being dropped. */
export async function dropLeftoverLoaders(docker: DockerClient, dbContainerId: string, databases: string[]): Promise<string[]> {
  const roles = (await psql(docker, dbContainerId, `SELECT rolname FROM pg_roles WHERE rolname LIKE '${LOADER_ROLE_PREFIX}%'`)).filter((r) => LOADER.test(r));
  for (const role of roles) await dropLoader(docker, dbContainerId, role, databases);
  return roles;
}
