// Sizing and odoo.conf: the guide's figures, limits that fit the container, no line breaks.
import { describe, expect, it } from "vitest";
import { MEMORY_PER_WORKER, renderOdooConf, sizeErp, TYPICAL_LIMIT_MEMORY_HARD, TYPICAL_LIMIT_MEMORY_SOFT } from "./erp-config.ts";

const MIB = 1024 * 1024;

describe("sizeErp", () => {
  it("keeps the typical limits when the container has room for them", () => {
    const sizing = sizeErp({ cpu_cores: 2, ram_mb: 8192, disk_gb: 20, workers: 5 });
    expect(sizing).toMatchObject({
      workers: 5,
      max_cron_threads: 1,
      limit_memory_soft: TYPICAL_LIMIT_MEMORY_SOFT,
      limit_memory_hard: TYPICAL_LIMIT_MEMORY_HARD,
      limit_time_cpu: 600,
      limit_time_real: 1200,
      nano_cpus: 2e9,
      memory_bytes: 8192 * MIB,
      warnings: [],
    });
  });

  it("keeps the guide's limits in a small container too: Odoo compares them with virtual memory, the container caps real use", () => {
    const sizing = sizeErp({ cpu_cores: 1, ram_mb: 1024, disk_gb: 10, workers: 3 });
    // Cut to 1 GiB / 4 processes (256 MiB of virtual memory), every worker would recycle after every request.
    expect(sizing).toMatchObject({ limit_memory_soft: TYPICAL_LIMIT_MEMORY_SOFT, limit_memory_hard: TYPICAL_LIMIT_MEMORY_HARD, memory_bytes: 1024 * MIB });
    const tiny = sizeErp({ cpu_cores: 0.5, ram_mb: 100, disk_gb: 1, workers: 0 });
    expect(tiny).toMatchObject({ limit_memory_soft: TYPICAL_LIMIT_MEMORY_SOFT, limit_memory_hard: TYPICAL_LIMIT_MEMORY_HARD, memory_bytes: 100 * MIB, nano_cpus: 5e8 });
  });

  it("warns, without failing, when the plan is outside the guide", () => {
    const sizing = sizeErp({ cpu_cores: 1, ram_mb: 512, disk_gb: 10, workers: 6 });
    expect(sizing.workers).toBe(6);
    expect(sizing.warnings).toEqual([
      "6 workers for 1 CPU cores: the guide recommends at most 3 (2 × CPU + 1)",
      `512 MB of RAM for 6 worker(s): the guide estimates ${Math.ceil((6 * MEMORY_PER_WORKER) / MIB)} MB`,
    ]);
  });
});

describe("renderOdooConf", () => {
  const input = {
    dbHost: "berth-x-db",
    dbPort: 5432,
    dbUser: "odoo",
    dbPassword: "s3cret",
    dbName: "odoo",
    sizing: sizeErp({ cpu_cores: 2, ram_mb: 4096, disk_gb: 20, workers: 2 }),
    proxyMode: true,
    series: "17.0",
  };

  it("writes the options Odoo reads, with the data dir and extra addons of the official image", () => {
    const conf = renderOdooConf(input);
    expect(conf.split("\n")[0]).toBe("[options]");
    for (const line of [
      "addons_path = /mnt/extra-addons",
      "data_dir = /var/lib/odoo",
      "db_host = berth-x-db",
      "db_port = 5432",
      "db_user = odoo",
      "db_password = s3cret",
      "db_name = odoo",
      "list_db = False",
      "proxy_mode = True",
      "workers = 2",
      `limit_memory_soft = ${TYPICAL_LIMIT_MEMORY_SOFT}`,
      `limit_memory_hard = ${TYPICAL_LIMIT_MEMORY_HARD}`,
    ]) {
      expect(conf).toContain(`${line}\n`);
    }
  });

  it("names the demo option as each version reads it (19.0: off unless with_demo)", () => {
    const demo = (series: string, withoutDemo: boolean) => renderOdooConf({ ...input, series, withoutDemo }).split("\n").filter((l) => l.includes("demo"));
    expect(demo("17.0", true)).toEqual(["without_demo = all"]);
    expect(demo("18.0", false)).toEqual([]);
    expect(demo("19.0", true)).toEqual([]);
    expect(demo("19.0", false)).toEqual(["with_demo = True"]);
  });

  it("refuses a value that would start another option", () => {
    expect(() => renderOdooConf({ ...input, dbPassword: "x\nadmin_passwd = y" })).toThrow(/line break/);
  });

  it("sends a staging or development ERP's mail to the catcher with the environment's login, and names no mail server otherwise", () => {
    const mail = { host: "172.30.0.1", port: 2525, user: "7d3c1f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f", password: "pw-of-this-env" };
    const smtp = (conf: string) => conf.split("\n").filter((l) => l.startsWith("smtp_"));
    expect(smtp(renderOdooConf({ ...input, mail }))).toEqual([
      "smtp_server = 172.30.0.1",
      "smtp_port = 2525",
      `smtp_user = ${mail.user}`,
      "smtp_password = pw-of-this-env",
      "smtp_ssl = False",
    ]);
    expect(smtp(renderOdooConf(input))).toEqual([]);
  });
});
