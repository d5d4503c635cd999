// odoo.conf for an environment, and the sizing behind it (Odoo's deployment guide, see
// shared/design/ERP-FACTS.md): workers from the plan, per-worker memory limits that fit
// the container's RAM, and warnings when the plan is outside the guide's figures.
import type { Resources } from "@berth/protocol";

const MIB = 1024 * 1024;
/** Odoo's typical limits: soft 640 MB, hard 1.6 GB. */
export const TYPICAL_LIMIT_MEMORY_SOFT = 640 * MIB;
export const TYPICAL_LIMIT_MEMORY_HARD = 1600 * MIB;
/** A worker needs about 0.8 × 150 MB + 0.2 × 1 GB (most requests light, some heavy). */
export const MEMORY_PER_WORKER = Math.round(0.8 * 150 * MIB + 0.2 * 1024 * MIB);
/** Below this a worker is recycled after nearly every request. */
const MIN_LIMIT_MEMORY_SOFT = 128 * MIB;

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
  // Every process may reach the soft limit at once: workers plus cron, or one threaded server.
  const processes = workers > 0 ? workers + maxCron : 1;
  const hard = Math.min(TYPICAL_LIMIT_MEMORY_HARD, memoryBytes);
  const soft = Math.min(
    hard,
    Math.max(MIN_LIMIT_MEMORY_SOFT, Math.min(TYPICAL_LIMIT_MEMORY_SOFT, Math.floor(memoryBytes / processes))),
  );

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
    limit_memory_soft: soft,
    limit_memory_hard: hard,
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
  /** New modules get no demo data. */
  withoutDemo?: boolean;
  /** The add-ons folders in precedence order; absent: /mnt/extra-addons alone. */
  addonsPath?: string[];
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
  if (input.withoutDemo === true) options.push(["without_demo", "all"]);
  for (const [key, value] of options) {
    // A line break would start another option: nothing Berth writes has one, and nothing may.
    if (/[\r\n]/.test(String(value))) throw new Error(`odoo.conf value of ${key} contains a line break`);
  }
  return ["[options]", ...options.map(([key, value]) => `${key} = ${value}`), ""].join("\n");
}
