// Where an environment lives on this server: the names of its Docker objects and its files
// under the agent's state directory. One function, so every handler agrees on them.
import { join } from "node:path";
import { UUID_PATTERN } from "@berth/protocol";
import { CommandError } from "../runner/handler-types.ts";

export interface EnvironmentLayout {
  environmentId: string;
  network: string;
  dbContainer: string;
  dbVolume: string;
  /** Holds the database's unix socket (/var/run/postgresql), shared with its loaders (loader-container.ts). */
  dbSocketVolume: string;
  erpContainer: string;
  /** <stateDir>/environments/<id> */
  dir: string;
  /** PostgreSQL password, generated once, mode 0600; never leaves this server. */
  dbPasswordFile: string;
  /** odoo.conf mounted at /etc/odoo/odoo.conf. */
  configFile: string;
  /** The ERP's data dir (/var/lib/odoo): file store, sessions. Survives redeploys. */
  dataDir: string;
  /** The customer's repository checkout, mounted at /mnt/extra-addons. */
  addonsDir: string;
  /** <stateDir>/backups/<id> */
  backupsDir: string;
}

const UUID = new RegExp(UUID_PATTERN);

/** The protocol checks ids as UUIDs; checked again here because they become paths and names. */
export function environmentLayout(stateDir: string, environmentId: string): EnvironmentLayout {
  if (!UUID.test(environmentId)) {
    throw new CommandError("invalid_params", `environment_id "${environmentId}" is not a lowercase UUID`);
  }
  const prefix = `berth-${environmentId}`;
  const dir = join(stateDir, "environments", environmentId);
  return {
    environmentId,
    network: prefix,
    dbContainer: `${prefix}-db`,
    dbVolume: `${prefix}-pgdata`,
    dbSocketVolume: `${prefix}-pgsocket`,
    erpContainer: `${prefix}-erp`,
    dir,
    dbPasswordFile: join(dir, "db-password"),
    configFile: join(dir, "odoo.conf"),
    dataDir: join(dir, "data"),
    addonsDir: join(dir, "addons"),
    backupsDir: join(stateDir, "backups", environmentId),
  };
}

/** A backup's folder; the id is a UUID for the same reason. */
export function backupDir(layout: EnvironmentLayout, backupId: string): string {
  if (!UUID.test(backupId)) throw new CommandError("invalid_params", `backup_id "${backupId}" is not a lowercase UUID`);
  return join(layout.backupsDir, backupId);
}

/** What the ERP's database is called inside the environment's PostgreSQL. */
export const ERP_DB_NAME = "odoo";
/** The PostgreSQL role the ERP connects as (a superuser of its own server, as in the official images). */
export const ERP_DB_USER = "odoo";
export const ERP_DB_PORT = 5432;
/** Where the PostgreSQL images keep the server's unix socket: the environment's socket volume is mounted there. */
export const POSTGRES_SOCKET_DIR = "/var/run/postgresql";
export const ERP_HTTP_PORT = "8069/tcp";
export const DEFAULT_DB_IMAGE = "postgres:16";
