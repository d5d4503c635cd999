// odoo.conf for an environment, and the sizing behind it (Odoo's deployment guide, see
// shared/design/ERP-FACTS.md): workers from the plan, the guide's per-worker memory limits,
// and warnings when the plan is outside the guide's figures.
//
// The memory limits are never derived from the container's RAM: Odoo compares them with a
// worker's VIRTUAL memory (odoo/service/server.py: limit_memory_soft against the process's
// vms after each request, limit_memory_hard as RLIMIT_AS), which for a Python worker is far
// above what it uses. Limits cut to a small container's RAM make every worker recycle after
// every request (or fail to allocate at all). The container's memory limit caps real use.
import type { Resources } from "@berth/protocol";
import { majorOf } from "./erp-modules.ts";

const MIB = 1024 * 1024;
/** Odoo's typical limits: soft 640 MB, hard 1.6 GB. */
export const TYPICAL_LIMIT_MEMORY_SOFT = 640 * MIB;
export const TYPICAL_LIMIT_MEMORY_HARD = 1600 * MIB;
/** A worker needs about 0.8 × 150 MB + 0.2 × 1 GB (most requests light, some heavy). */
export const MEMORY_PER_WORKER = Math.round(0.8 * 150 * MIB + 0.2 * 1024 * MIB);

export interface ErpSizing {
  workers: number;
  max_cron_threads: number;
  limit_memory_soft: number;
  limit_memory_hard: number;
  limit_time_cpu: number;
  limit_time_real: number;
  /** Docker limits of the container. */
  nano_cpus: number;
  memory_bytes: number;
  /** Where the plan departs from the guide; reported as warnings, never fatal. */
  warnings: string[];
}

export function sizeErp(resources: Resources): ErpSizing {
  const workers = resources.workers;
  const maxCron = 1;
  const memoryBytes = resources.ram_mb * MIB;

  const warnings: string[] = [];
  const recommendedWorkers = Math.floor(2 * resources.cpu_cores + 1);
  if (workers > recommendedWorkers) {
    warnings.push(
      `${workers} workers for ${resources.cpu_cores} CPU cores: the guide recommends at most ${recommendedWorkers} (2 × CPU + 1)`,
    );
  }
  const needed = Math.max(1, workers) * MEMORY_PER_WORKER;
  if (needed > memoryBytes) {
    warnings.push(
      `${resources.ram_mb} MB of RAM for ${Math.max(1, workers)} worker(s): the guide estimates ${Math.ceil(needed / MIB)} MB`,
    );
  }
  return {
    workers,
    max_cron_threads: maxCron,
    limit_memory_soft: TYPICAL_LIMIT_MEMORY_SOFT,
    limit_memory_hard: TYPICAL_LIMIT_MEMORY_HARD,
    limit_time_cpu: 600,
    limit_time_real: 1200,
    nano_cpus: Math.round(resources.cpu_cores * 1e9),
    memory_bytes: memoryBytes,
    warnings,
  };
}

export interface OdooConfInput {
  dbHost: string;
  dbPort: number;
  dbUser: string;
  dbPassword: string;
  dbName: string;
  sizing: ErpSizing;
  /** Behind the reverse proxy (a domain is routed): trust its X-Forwarded-* headers. */
  proxyMode: boolean;
  /** The database manager's master password; absent: not written (Odoo's default applies). */
  adminPasswd?: string;
  /** The ERP's series ("17.0"): the demo option's name and meaning depend on it. */
  series: string;
  /** New modules get no demo data. */
  withoutDemo?: boolean;
  /** The add-ons folders in precedence order; absent: /mnt/extra-addons alone. */
  addonsPath?: string[];
  /** Staging and development: the server's mail catcher and this environment's login on it. */
  mail?: CatcherLogin;
}

export interface CatcherLogin {
  host: string;
  port: number;
  user: string;
  password: string;
}

/**
 * Odoo's outgoing mail settings pointing at the catcher (odoo/tools/config.py: smtp_server,
 * smtp_port, smtp_user, smtp_password, smtp_ssl). Odoo uses them whenever no active
 * ir.mail_server record is found (odoo/addons/base/models/ir_mail_server.py, connect /
 * _connect__: `smtp_server = host or tools.config.get('smtp_server')`, with the config's
 * user, password and encryption), and a copy's `odoo neutralize` deactivates the customer's
 * records: so a staging or development ERP sends to the catcher.
 */
function mailOptions(mail: CatcherLogin): [string, string | number][] {
  return [
    ["smtp_server", mail.host],
    ["smtp_port", mail.port],
    ["smtp_user", mail.user],
    ["smtp_password", mail.password],
    // The catcher speaks plain SMTP on an address only this host has.
    ["smtp_ssl", "False"],
  ];
}

/** The [options] section Odoo reads from /etc/odoo/odoo.conf. */
export function renderOdooConf(input: OdooConfInput): string {
  const { sizing } = input;
  const options: [string, string | number][] = [
    ["addons_path", input.addonsPath && input.addonsPath.length > 0 ? input.addonsPath.join(",") : "/mnt/extra-addons"],
    ["data_dir", "/var/lib/odoo"],
    ["db_host", input.dbHost],
    ["db_port", input.dbPort],
    ["db_user", input.dbUser],
    ["db_password", input.dbPassword],
    ["db_name", input.dbName],
    // The database manager would let anyone with the master password drop the database.
    ["list_db", "False"],
    ["http_port", 8069],
    ["gevent_port", 8072],
    ["proxy_mode", input.proxyMode ? "True" : "False"],
    ["workers", sizing.workers],
    ["max_cron_threads", sizing.max_cron_threads],
    ["limit_memory_soft", sizing.limit_memory_soft],
    ["limit_memory_hard", sizing.limit_memory_hard],
    ["limit_time_cpu", sizing.limit_time_cpu],
    ["limit_time_real", sizing.limit_time_real],
  ];
  if (input.adminPasswd !== undefined) options.push(["admin_passwd", input.adminPasswd]);
  options.push(...demoOptions(input.series, input.withoutDemo === true));
  if (input.mail !== undefined) options.push(...mailOptions(input.mail));
  for (const [key, value] of options) {
    // A line break would start another option: nothing Berth writes has one, and nothing may.
    if (/[\r\n]/.test(String(value))) throw new Error(`odoo.conf value of ${key} contains a line break`);
  }
  return ["[options]", ...options.map(([key, value]) => `${key} = ${value}`), ""].join("\n");
}

/**
 * The demo option of odoo.conf per version (odoo/tools/config.py): up to 18.0 `without_demo`
 * holds the modules without demo data ("all"); 19.0 has no demo data unless `with_demo` is
 * true, and reads a `without_demo` of "all" only with a warning ("invalid boolean value").
 */
export function demoOptions(series: string, withoutDemo: boolean): [string, string][] {
  if (majorOf(series) >= 19) return withoutDemo ? [] : [["with_demo", "True"]];
  return withoutDemo ? [["without_demo", "all"]] : [];
}
