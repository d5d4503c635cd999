// ERP backups as the vendor's tools make them, read and loaded with the real Docker engine:
// the ERP stand-in's database is dumped with pg_dump (plain SQL, --no-owner, as the database
// manager does), packed as a zip by Python's zipfile (dump.sql first, manifest.json,
// filestore/<2 hex>/<sha1>) and as a tar.gz, and each is loaded into a new database of the
// environment's PostgreSQL that must then hold exactly the rows of the original; the file
// store members come out as a tar for the data dir; a dump carrying a shell meta-command is
// refused before psql runs it. Needs `bash .ci/docker-setup.sh` first.
import { createHash, randomUUID } from "node:crypto";
import { execFileSync } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { createExecutorHarness, deployParams, finishSuite, requireTestImages, addRow, rowsOf, PRODUCTION_ONLY_SQL } from "../executor.test-helpers.ts";
import { environmentLayout } from "../environment/environment-layout.ts";
import { hostPortOf } from "../environment/erp-container.ts";
import { createDatabase, dropDatabase } from "../environment/database-swap.ts";
import { loadSqlDump } from "../environment/sql-dump.ts";
import { fileStoreTar, readErpArchive, type FileStoreEntry } from "./erp-archive.ts";
import { verifyRestoredDatabase } from "./restore-verification.ts";

const SUITE = "executor-erp-archive";

describe("ERP backup archives", () => {
  const h = createExecutorHarness(SUITE, { healthTimeoutMs: 8_000, healthIntervalMs: 300 });
  const env = randomUUID();
  const layout = environmentLayout(h.stateDir, env);
  const work = mkdtempSync(join(tmpdir(), "berth-erp-archive-"));
  const files: Record<string, Buffer> = {
    [`ab/ab${"1".repeat(38)}`]: Buffer.from("an attachment\n"),
    [`cd/cd${"2".repeat(38)}`]: Buffer.from("another attachment\n"),
  };
  let dbId = "";

  const psql = async (sql: string, database = "odoo") => {
    const r = await h.docker.exec(layout.dbContainer, ["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", sql], { deadlineMs: 60_000 });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };

  /** Loads the archive into a new database; returns its name and the file store members read. */
  const load = async (archive: string) => {
    const database = `odoo_restore_${Date.now().toString(36)}${String(Math.floor(Math.random() * 1e4)).padStart(4, "0")}`;
    await createDatabase(h.docker, dbId, database);
    const seen: Record<string, string> = {};
    const tar = fileStoreTar("filestore/odoo/", { uid: 100, gid: 101 });
    const parsed = collectTar(tar.stream);
    const read = await readErpArchive(archive, {
      onDump: (dump) => loadSqlDump(h.docker, dbId, database, dump, 120_000),
      onFile: async (entry: FileStoreEntry) => {
        seen[entry.path] = String(entry.size);
        await tar.add(entry);
      },
    }).finally(() => tar.finish());
    return { database, read, seen, tarFiles: await parsed };
  };

  beforeAll(async () => {
    await requireTestImages(h.docker);
    const run = await h.run("deploy", deployParams(env));
    if (!run.outcome.ok) throw new Error(run.outcome.error.message);
    const erp = await h.docker.inspectContainer(layout.erpContainer);
    const port = await hostPortOf(h.docker, erp!.id);
    for (const note of ["a customer", "an invoice", "tab\there and a \\ backslash"]) await addRow(port, note);
    dbId = (await h.docker.inspectContainer(layout.dbContainer))!.id;
    // What a production ERP has that a copy must not run: scheduled actions, mail servers.
    await psql(
      PRODUCTION_ONLY_SQL,
    );

    // The database manager's backup: pg_dump --no-owner (plain), manifest.json, the file store.
    const dump = join(work, "dump.sql");
    const out = createWriteStream(dump);
    const r = await h.docker.exec(layout.dbContainer, ["pg_dump", "-U", "odoo", "--no-owner", "-d", "odoo"], { deadlineMs: 60_000, stdout: out });
    if (r.exitCode !== 0) throw new Error(r.stderr);
    const store = join(work, "filestore");
    for (const [path, body] of Object.entries(files)) {
      mkdirSync(join(store, path.slice(0, 2)), { recursive: true });
      writeFileSync(join(store, path), body);
    }
    writeFileSync(join(work, "manifest.json"), JSON.stringify({ odoo_dump: "1", db_name: "shop", version: "17.0", pg_version: "15.0", modules: { base: "17.0.1.3" } }));
    execFileSync("python3", [
      "-c",
      `import zipfile, os, sys
w = sys.argv[1]
with zipfile.ZipFile(os.path.join(w, "backup.zip"), "w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as z:
    z.write(os.path.join(w, "dump.sql"), "dump.sql")
    z.write(os.path.join(w, "manifest.json"), "manifest.json")
    for root, _, names in os.walk(os.path.join(w, "filestore")):
        for n in names:
            p = os.path.join(root, n)
            z.write(p, os.path.relpath(p, w))`,
      work,
    ]);
    execFileSync("tar", ["-czf", join(work, "backup.tar.gz"), "-C", work, "dump.sql", "filestore"]);
  }, 240_000);

  afterAll(() => finishSuite(SUITE, h, work), 180_000);

  const original = () => psql("SELECT string_agg(id || ':' || note, '|' ORDER BY id) FROM berth_probe");

  it("loads an Odoo zip (dump.sql, manifest, file store): the same rows and modules, every file store member", async () => {
    const { database, read, seen, tarFiles } = await load(join(work, "backup.zip"));
    expect(read).toEqual({ format: "zip", dump: "dump.sql", files: 2 });
    expect(await psql("SELECT string_agg(id || ':' || note, '|' ORDER BY id) FROM berth_probe", database)).toBe(await original());
    expect(await verifyRestoredDatabase(h.docker, dbId, database)).toMatch(/^Verified: 8 modules in ir_module_module, base installed/);
    // Made as Odoo makes its databases (odoo/service/db.py): UTF-8, C collation.
    expect(await psql(`SELECT pg_encoding_to_char(encoding) || ' ' || datcollate FROM pg_database WHERE datname = '${database}'`)).toBe("UTF8 C");
    expect(Object.keys(seen).sort()).toEqual(Object.keys(files).sort());
    // The file store as the data dir gets it: filestore/<database>/<2 hex>/<sha1>, bytes intact.
    expect(tarFiles).toEqual(Object.fromEntries(Object.entries(files).map(([p, b]) => [`filestore/odoo/${p}`, sha(b)])));
    await dropDatabase(h.docker, dbId, database);
  }, 120_000);

  it("loads a tar.gz of the dump and file store, and a plain SQL file", async () => {
    const tgz = await load(join(work, "backup.tar.gz"));
    expect(tgz.read).toEqual({ format: "tar.gz", dump: "dump.sql", files: 2 });
    expect(await psql("SELECT count(*) FROM berth_probe", tgz.database)).toBe(await psql("SELECT count(*) FROM berth_probe"));
    await dropDatabase(h.docker, dbId, tgz.database);

    const sql = await load(join(work, "dump.sql"));
    expect(sql.read).toMatchObject({ format: "sql", files: 0 });
    expect(await psql("SELECT string_agg(id || ':' || note, '|' ORDER BY id) FROM berth_probe", sql.database)).toBe(await original());
    await dropDatabase(h.docker, dbId, sql.database);
  }, 120_000);

  it("the restore command restores an Odoo zip fetched from the store: the ERP serves its rows and file store, not what was there", async () => {
    // The control plane's store, as a restore command's signed path serves it.
    const body = readFileSync(join(work, "backup.zip"));
    const server = createServer((req, res) => {
      if (req.url !== "/store/migration/backup.zip") return void res.writeHead(404).end();
      res.writeHead(200, { "content-length": String(body.length) }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    const suite = `${SUITE}-restore`;
    const h2 = createExecutorHarness(suite, { healthTimeoutMs: 8_000, healthIntervalMs: 300 }, {}, {}, { controlPlaneUrl: `http://127.0.0.1:${String(port)}` });
    try {
      const target = randomUUID();
      const deployed = await h2.run("deploy", deployParams(target));
      expect(deployed.outcome.ok).toBe(true);
      const t = environmentLayout(h2.stateDir, target);
      const erpPort = async () => hostPortOf(h2.docker, (await h2.docker.inspectContainer(t.erpContainer))!.id);
      await addRow(await erpPort(), "written before the migration");
      const run = await h2.run("restore", {
        deployment_id: randomUUID(),
        environment_id: target,
        backup_id: randomUUID(),
        archive: {
          path: "/store/migration",
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          file: { name: "backup.zip", size: body.length, sha256: sha(body) },
          neutralize: true,
        },
      });
      if (!run.outcome.ok) throw new Error(run.outcome.error.message);
      expect(run.logs.map((l) => l.message)).toContainEqual(expect.stringMatching(/^psql loaded dump\.sql \(zip\) into odoo_restore_\w+ without error; 2 file store files/));
      const notes = (await rowsOf(await erpPort())).rows.map((r) => r.note);
      expect(notes.join("|")).toBe((await original()).split("|").map((x) => x.slice(x.indexOf(":") + 1)).join("|"));
      expect(notes).not.toContain("written before the migration");
      for (const [path, bytes] of Object.entries(files)) expect(readFileSync(join(t.dataDir, "filestore", "odoo", path))).toEqual(bytes);
      // Not production: neutralised before it ever served (the autovacuum job alone stays on).
      const q = async (sql: string) => {
        const r = await h2.docker.exec(t.dbContainer, ["psql", "-U", "odoo", "-d", "odoo", "-X", "-q", "-A", "-t", "-c", sql], { deadlineMs: 60_000 });
        return r.stdout.trim();
      };
      expect(await q("SELECT string_agg(cron_name, ',' ORDER BY id) FROM ir_cron WHERE active")).toBe("Base: Auto-vacuum internal data");
      // Odoo's own neutralize: every mail server off, and its dummy one on an invalid host on.
      expect(await q("SELECT string_agg(name || '@' || smtp_host, ',') FROM ir_mail_server WHERE active")).toBe("neutralization - disable emails@invalid");
      expect(await q("SELECT value FROM ir_config_parameter WHERE key = 'database.is_neutralized'")).toBe("true");
      // Re-keyed: production's uuid and secret are not the copy's; no address known here: Odoo's default.
      for (const key of ["database.uuid", "database.secret"]) {
        expect(await q(`SELECT value FROM ir_config_parameter WHERE key = '${key}'`)).not.toBe(await psql(`SELECT value FROM ir_config_parameter WHERE key = '${key}'`));
      }
      expect(await q("SELECT value FROM ir_config_parameter WHERE key = 'web.base.url'")).toBe("http://localhost:8069");
      const messages = run.logs.map((l) => l.message);
      expect(messages).toContainEqual("Neutralised by the image's own odoo neutralize (each installed module's data/neutralize.sql)");
      expect(messages).toContainEqual(expect.stringMatching(/^neutralize: .* odoo\.modules\.neutralize: Neutralization finished$/));
      // The original is untouched.
      expect(await psql("SELECT count(*) FROM ir_cron WHERE active")).toBe("4");
      expect(await psql("SELECT value FROM ir_config_parameter WHERE key = 'web.base.url'")).toBe("https://erp.customer.example");
    } finally {
      server.close();
      await finishSuite(suite, h2);
    }
  }, 240_000);

  it("refuses a dump with a psql meta-command pg_dump never writes, before psql runs it", async () => {
    const evil = join(work, "evil.sql");
    execFileSync("cp", [join(work, "dump.sql"), evil]);
    appendFileSync(evil, "\\! touch /tmp/berth-archive-pwned\n");
    await expect(load(evil)).rejects.toMatchObject({ code: "dump_refused" });
    const r = await h.docker.exec(layout.dbContainer, ["ls", "/tmp/berth-archive-pwned"], { deadlineMs: 10_000 });
    expect(r.exitCode).not.toBe(0);
  }, 120_000);

  it("refuses a dump made by a newer pg_dump than the environment's PostgreSQL, saying which, before psql runs it", async () => {
    const newer = join(work, "newer.sql");
    const dump = readFileSync(join(work, "dump.sql"), "utf8");
    // What pg_dump 17 writes, which PostgreSQL 15 (the test image) rejects.
    writeFileSync(newer, dump.replace(/^-- Dumped by pg_dump version [^\n]*/m, "-- Dumped by pg_dump version 17.2").replace(/^SET statement_timeout = 0;$/m, "SET statement_timeout = 0;\nSET transaction_timeout = 0;"));
    await expect(load(newer)).rejects.toMatchObject({ code: "dump_too_new", message: expect.stringMatching(/made by pg_dump 17, newer than this environment's PostgreSQL 15/) });
  }, 120_000);

  it("names what is wrong with a file that is not a backup, and with a zip without a dump", async () => {
    const junk = join(work, "junk.bin");
    writeFileSync(junk, Buffer.from([0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3]));
    await expect(readErpArchive(junk, { onDump: async () => undefined, onFile: async () => undefined })).rejects.toMatchObject({ code: "archive_unreadable" });
    const noDump = join(work, "no-dump.zip");
    execFileSync("python3", ["-c", "import zipfile,sys; z=zipfile.ZipFile(sys.argv[1],'w'); z.writestr('manifest.json','{}'); z.close()", noDump]);
    await expect(readErpArchive(noDump, { onDump: async () => undefined, onFile: async () => undefined })).rejects.toMatchObject({
      code: "archive_no_dump",
      message: expect.stringContaining("no database dump found"),
    });
  });
});

function sha(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}

/** The files of a tar stream: name -> sha256 of the content. */
function collectTar(stream: NodeJS.ReadableStream): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const out: Record<string, string> = {};
    const x = extract();
    x.on("entry", (header, body, next) => {
      if (header.type === "directory") {
        body.resume();
        body.on("end", () => next());
        return;
      }
      const hash = createHash("sha256");
      body.on("data", (c: Buffer) => hash.update(c));
      body.on("end", () => {
        out[header.name] = hash.digest("hex");
        next();
      });
    });
    x.on("finish", () => resolve(out));
    x.on("error", reject);
    stream.pipe(x);
  });
}
