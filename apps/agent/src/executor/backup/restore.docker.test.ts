// A restore cannot lose the database, on the real Docker engine with the test images: a good
// backup comes back and leaves nothing behind; a dump pg_restore cannot load, one that loads
// but fails verification, and one the ERP cannot start on all leave the live database (and
// its rows) as they were; an agent interrupted after the swap is rolled back by the next
// operation. Needs `bash .ci/docker-setup.sh` first.
import { createHash, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepsForKind } from "@berth/protocol";
import { addRow, createExecutorHarness, deployParams, finishSuite, requireTestImages, rowsOf, stepTrail, type Run } from "../executor.test-helpers.ts";
import { ROLLED_BACK } from "./restore.ts";

const SUITE = "executor-restore";

function resultOf(run: Run): Record<string, unknown> {
  if (!run.outcome.ok) throw new Error(`the command failed: ${run.outcome.error.code}: ${run.outcome.error.message}`);
  return run.outcome.result;
}

async function healthOf(port: unknown): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${String(port)}/web/health`, { signal: AbortSignal.timeout(5_000) });
  return response.status;
}

/** The columns the stand-in's own module table has (test/images/erp/odoo.c), so the ERP serves a database made with it. */
const MODULE_TABLE =
  "CREATE TABLE ir_module_module (id serial PRIMARY KEY, name varchar NOT NULL UNIQUE, state varchar(16) NOT NULL DEFAULT 'installed', " +
  "latest_version varchar, demo boolean NOT NULL DEFAULT false, author varchar, license varchar(32), " +
  "create_date timestamp NOT NULL DEFAULT now(), write_date timestamp NOT NULL DEFAULT now())";

describe("a restore that cannot lose the database", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 20_000, healthIntervalMs: 300, stopGraceSeconds: 5 });
  const env = randomUUID();
  const envDir = join(h.stateDir, "environments", env);
  const dbContainer = `berth-${env}-db`;
  let port: unknown = null;

  const psql = async (sql: string, database = "postgres"): Promise<string[]> => {
    const result = await h.docker.exec(dbContainer, ["psql", "-U", "odoo", "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], {
      deadlineMs: 30_000,
    });
    if (result.exitCode !== 0) throw new Error(`psql: ${result.stderr}`);
    return result.stdout.split("\n").filter((l) => l !== "");
  };
  const databases = () => psql("SELECT datname FROM pg_database WHERE datname LIKE 'odoo%' ORDER BY 1");
  const leftovers = () => readdirSync(envDir).filter((e) => /^(data-restore-|data-previous-|restore-state)/.test(e));

  /** A custom-format dump of a scratch database made by `sql`. */
  const dumpOf = async (sql: string): Promise<Buffer> => {
    const name = `scratch_${randomUUID().slice(0, 8)}`;
    await psql(`CREATE DATABASE ${name}`);
    try {
      if (sql !== "") await psql(sql, name);
      const chunks: Buffer[] = [];
      const sink = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          chunks.push(chunk);
          callback();
        },
      });
      const result = await h.docker.exec(dbContainer, ["pg_dump", "-U", "odoo", "--format=custom", "--dbname", name], {
        deadlineMs: 30_000,
        stdout: sink,
      });
      if (result.exitCode !== 0) throw new Error(`pg_dump: ${result.stderr}`);
      return Buffer.concat(chunks);
    } finally {
      await psql(`DROP DATABASE ${name}`);
    }
  };

  /** A fresh backup whose db.dump is replaced by `dump`, with the manifest's checksum made to match it. */
  const backupWithDump = async (dump: (original: Buffer) => Buffer): Promise<string> => {
    const backupId = randomUUID();
    resultOf(await h.run("backup", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId }));
    const dir = join(h.stateDir, "backups", env, backupId);
    const bytes = dump(readFileSync(join(dir, "db.dump")));
    writeFileSync(join(dir, "db.dump"), bytes);
    const manifestPath = join(dir, "manifest.json");
    const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { files: { name: string; size: number; sha256: string }[] };
    for (const f of manifest.files) {
      if (f.name !== "db.dump") continue;
      f.size = bytes.length;
      f.sha256 = createHash("sha256").update(bytes).digest("hex");
    }
    writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
    return backupId;
  };

  const restore = (backupId: string) => h.run("restore", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId });

  /** The live ERP and its database are exactly as before. */
  const expectUntouched = async (before: Awaited<ReturnType<typeof rowsOf>>) => {
    expect(await rowsOf(port)).toEqual(before);
    expect(await healthOf(port)).toBe(200);
    expect(await databases()).toEqual(["odoo"]);
    expect(leftovers()).toEqual([]);
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    const result = resultOf(await h.run("deploy", deployParams(env)));
    port = result.host_port;
    await addRow(port, "in every backup");
  }, 120_000);

  afterAll(() => finishSuite(SUITE, h), 120_000);

  it("restores into a new database, swaps it in, and leaves no restore or previous database behind", async () => {
    const before = await rowsOf(port);
    const backupId = randomUUID();
    resultOf(await h.run("backup", { deployment_id: randomUUID(), environment_id: env, backup_id: backupId }));
    await addRow(port, "after the backup");

    const run = await restore(backupId);
    const result = resultOf(run);
    expect(stepTrail(run)).toEqual(stepsForKind("restore").flatMap((s) => [`started:${s}`, `finished:${s}`]));
    expect(result).toMatchObject({ healthy: true });
    port = result.host_port;
    const after = await rowsOf(port);
    expect(after.rows).toEqual(before.rows);
    expect(after.filestore_marker).toBe(true);
    expect(await databases()).toEqual(["odoo"]);
    expect(leftovers()).toEqual([]);
    const messages = run.logs.map((l) => l.message);
    for (const expected of [
      /^Restoring into a new database odoo_restore_[a-z0-9]+; the live database "odoo" is not touched and the ERP keeps serving$/,
      // The stand-in keeps the ERP's module table, as Odoo does: base installed, the 7 other standard modules listed.
      /^Verified: 8 modules in ir_module_module, base installed \(\d+ tables\)$/,
      /^File store extracted into data-restore-/,
      /^Swapped: odoo_restore_[a-z0-9]+ is now "odoo", the previous database is kept as odoo_previous_/,
      /^Previous database dropped \(odoo_previous_[a-z0-9]+\) and previous file store removed$/,
    ]) {
      expect(messages).toContainEqual(expect.stringMatching(expected));
    }
    // No helper container is left.
    const containers = await h.docker.listContainers({ label: [`berth.environment_id=${env}`] });
    expect(containers.map((c) => c.name).sort()).toEqual([`berth-${env}-db`, `berth-${env}-erp`]);
  }, 120_000);

  it("a dump pg_restore cannot load (its checksum matching the manifest) fails the restore and leaves the live database as it was", async () => {
    for (const damage of [
      (b: Buffer) => b.subarray(0, Math.floor(b.length / 2)),
      (b: Buffer) => {
        const copy = Buffer.from(b);
        for (let i = Math.floor(b.length / 3); i < Math.floor(b.length / 3) + 64 && i < b.length; i++) copy[i] = 0x5a;
        return copy;
      },
    ]) {
      const backupId = await backupWithDump(damage);
      await addRow(port, "after the damaged backup");
      const before = await rowsOf(port);

      const run = await restore(backupId);
      expect(run.outcome).toMatchObject({ ok: false, error: { code: "restore_failed", message: expect.stringMatching(/^pg_restore failed/) } });
      expect(stepTrail(run)).toContain("failed:initializing_database");
      expect(run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^Dropped odoo_restore_[a-z0-9]+ .*the live database was not touched$/));
      // The ERP never stopped: same port, same rows.
      await expectUntouched(before);
    }
  }, 120_000);

  it("a dump that loads but fails verification leaves the live database as it was", async () => {
    for (const [sql, why] of [
      ["", /not an ERP database: no ir_module_module among its 0 tables/],
      // Any tables at all are not enough: an ERP database has its module table.
      ["CREATE TABLE public.other (x int); INSERT INTO public.other VALUES (1)", /not an ERP database: no ir_module_module among its 1 tables/],
      ["CREATE TABLE ir_module_module (id serial PRIMARY KEY, name text, state text)", /ir_module_module has 0 rows but no installed base/],
      ["CREATE TABLE ir_module_module (id serial PRIMARY KEY, name text, state text); INSERT INTO ir_module_module (name, state) VALUES ('base', 'uninstalled')", /has 1 rows but no installed base/],
    ] as const) {
      const dump = await dumpOf(sql);
      const backupId = await backupWithDump(() => dump);
      const before = await rowsOf(port);

      const run = await restore(backupId);
      expect(run.outcome).toMatchObject({ ok: false, error: { code: "restore_verification_failed", message: expect.stringMatching(why) } });
      expect(run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^pg_restore loaded the dump into odoo_restore_/));
      await expectUntouched(before);
    }
  }, 120_000);

  it("an ERP that does not start on the restored database gets the previous database and file store back", async () => {
    // It loads and verifies (an ERP database with base installed), but the stand-in ERP cannot
    // create its berth_probe table where a type of that name exists, and exits at start.
    const dump = await dumpOf(`${MODULE_TABLE}; INSERT INTO ir_module_module (name) VALUES ('base'); CREATE TYPE public.berth_probe AS ENUM ('x')`);
    const backupId = await backupWithDump(() => dump);
    await addRow(port, "before the failing restore");
    const before = await rowsOf(port);

    const run = await restore(backupId);
    expect(run.outcome).toMatchObject({ ok: false, error: { code: "restore_unhealthy", message: expect.stringContaining(ROLLED_BACK) } });
    expect(stepTrail(run).slice(-2)).toEqual(["started:health_check", "failed:health_check"]);
    const messages = run.logs.map((l) => l.message);
    expect(messages).toContainEqual(expect.stringMatching(/^Swapped: /));
    // It failed for the reason the dump was made for.
    expect(messages).toContainEqual(expect.stringContaining("Failed to initialize database `odoo`"));
    expect(messages).toContainEqual(expect.stringMatching(/^Swapped back: database odoo_previous_[a-z0-9]+ is "odoo" again$/));

    // Docker chose a new port when the ERP started again.
    const erp = await h.docker.inspectContainer(`berth-${env}-erp`);
    port = erp?.hostPorts["8069/tcp"];
    await waitHealthy(port);
    await expectUntouched(before);
    expect((await rowsOf(port)).filestore_marker).toBe(true);
  }, 120_000);

  it("an agent interrupted after the swap: the next operation rolls the restore back", async () => {
    const before = await rowsOf(port);
    // What a crash between the swap and the health check leaves: the journal, the live
    // database and file store set aside, the restored ones in their place.
    const erp = `berth-${env}-erp`;
    await h.docker.stopContainer((await h.docker.inspectContainer(erp))?.id ?? erp, 5);
    writeFileSync(join(envDir, "restore-state.json"), JSON.stringify({ restore_id: "crash1", phase: "swapping" }));
    await psql("ALTER DATABASE odoo RENAME TO odoo_previous_crash1");
    await psql("CREATE DATABASE odoo");
    renameSync(join(envDir, "data"), join(envDir, "data-previous-crash1"));
    mkdirSync(join(envDir, "data"));
    // And a copy that was being loaded by another, earlier interrupted restore.
    await psql("CREATE DATABASE odoo_restore_crash0");

    const run = await h.run("start", { deployment_id: randomUUID(), environment_id: env });
    const result = resultOf(run);
    expect(run.logs.map((l) => l.message)).toContainEqual(
      "Rolled back the interrupted restore crash1 to the database as it was before the restore",
    );
    port = result.host_port;
    await expectUntouched(before);
    expect(existsSync(join(envDir, "data", "filestore"))).toBe(true);
  }, 120_000);

  it("a missing odoo database next to an odoo_previous_* one is renamed back", async () => {
    const before = await rowsOf(port);
    const erp = (await h.docker.inspectContainer(`berth-${env}-erp`))?.id ?? "";
    await h.docker.stopContainer(erp, 5);
    await psql("ALTER DATABASE odoo RENAME TO odoo_previous_crash2");

    const run = await h.run("start", { deployment_id: randomUUID(), environment_id: env });
    port = resultOf(run).host_port;
    expect(run.logs.map((l) => l.message)).toContainEqual('Database "odoo" was missing: renamed odoo_previous_crash2 back');
    await expectUntouched(before);
  }, 120_000);

  it("counts the modules of a dump that has the ERP's module table (last: it replaces the database)", async () => {
    const dump = await dumpOf(`${MODULE_TABLE}; INSERT INTO ir_module_module (name) VALUES ('base'), ('web')`);
    const backupId = await backupWithDump(() => dump);
    const run = await restore(backupId);
    port = resultOf(run).host_port;
    expect(run.logs.map((l) => l.message)).toContainEqual("Verified: 2 modules in ir_module_module, base installed (1 tables)");
    expect(await psql("SELECT name FROM ir_module_module ORDER BY id", "odoo")).toEqual(["base", "web"]);
    expect(await databases()).toEqual(["odoo"]);
    expect(leftovers()).toEqual([]);
  }, 120_000);
});

async function waitHealthy(port: unknown): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (true) {
    const status = await healthOf(port).catch(() => 0);
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`/web/health on ${String(port)} never answered 200`);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
}
