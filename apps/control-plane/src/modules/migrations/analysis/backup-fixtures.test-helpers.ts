// Realistic ERP backups for the analysis tests, made the way the vendor's database manager
// makes them: a real PostgreSQL 15 (Debian's, started here on a private socket) holds an
// ERP-shaped database, `pg_dump --no-owner` dumps it, and the dump is packed as a zip
// (dump.sql first, manifest.json, filestore/ab/ab12...), a tar.gz, or left as plain SQL.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { createGzip } from "node:zlib";
import tar from "tar-stream";
import yazl from "yazl";
import type { BackupSource } from "./analysis-types.ts";

const PG_BIN = process.env.BERTH_PG15_BIN ?? "/usr/lib/postgresql/15/bin";

/** A PostgreSQL 15 server of this test file, reached through a Unix socket. */
export interface Pg15 {
  sql(database: string, sql: string): void;
  /** pg_dump --no-owner of `database`, with `args` (e.g. --compress=0) added. */
  dump(database: string, format?: "plain" | "custom", args?: string[]): Buffer;
  stop(): Promise<void>;
}

/** Starts Debian's PostgreSQL 15 in a temporary folder (as the postgres user when we are root). */
export async function startPg15(): Promise<Pg15> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "berth-analysis-pg-"));
  await chmod(dir, 0o755);
  const data = path.join(dir, "data");
  const sock = path.join(dir, "sock");
  await mkdir(sock);
  const asUser: { uid?: number; gid?: number } = {};
  if (process.getuid?.() === 0) {
    asUser.uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    asUser.gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    await chown(sock, asUser.uid, asUser.gid);
    await mkdir(data);
    await chown(data, asUser.uid, asUser.gid);
  }
  execFileSync(`${PG_BIN}/initdb`, ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"], { ...asUser, stdio: "pipe" });
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const server: ChildProcess = spawn(`${PG_BIN}/postgres`, ["-D", data, "-k", sock, "-p", port, "-c", "listen_addresses=", "-c", "fsync=off"], { ...asUser, stdio: "ignore" });
  const conn = ["-h", sock, "-p", port, "-U", "postgres"];
  for (let i = 0; ; i++) {
    try {
      execFileSync(`${PG_BIN}/pg_isready`, conn, { stdio: "pipe" });
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    sql(database, sql) {
      execFileSync(`${PG_BIN}/psql`, [...conn, "-d", database, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], { input: sql, stdio: ["pipe", "pipe", "pipe"] });
    },
    dump(database, format = "plain", args = []) {
      return execFileSync(`${PG_BIN}/pg_dump`, [...conn, "--no-owner", `--format=${format === "plain" ? "p" : "c"}`, ...args, database], { maxBuffer: 1 << 30 });
    },
    async stop() {
      server.kill("SIGINT");
      await new Promise((r) => server.once("exit", r));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The facts an ERP-shaped database is made with, which the analysis must find again. */
export interface ErpDatabaseFacts {
  baseVersion: string;
  installed: string[];
  standard: string[];
  custom: string[];
  /** Installed Enterprise modules. */
  enterprise: string[];
  internalUsers: number;
  activePartners: number;
  attachmentBytes: number;
  attachmentFiles: number;
}

/** The ERP stand-in's standard add-ons (test/images/erp/addons): their tables are those of Odoo's base, web and mail. */
const STAND_IN_ADDONS = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../../../../test/images/erp/addons");

/**
 * The SQL with which the stand-in's `module` makes its tables in series `major` (as
 * test/images/build.sh assembles it: the file, then each `<file>@<lo>-<hi>` whose range holds
 * the major), so a fixture database has the tables Odoo's own neutralize.sql of that module
 * works on, as a real database does.
 */
function standInTables(module: string, major: number): string {
  const dir = path.join(STAND_IN_ADDONS, module);
  const parts = [readFileSync(path.join(dir, "berth_upgrade.sql"), "utf8")];
  for (const name of readdirSync(dir).sort()) {
    const range = /^berth_upgrade\.sql@(\d+)(?:-(\d+))?$/.exec(name);
    if (range !== null && Number(range[1]) <= major && major <= Number(range[2] ?? range[1])) parts.push(readFileSync(path.join(dir, name), "utf8"));
  }
  return parts.join("\n");
}

/**
 * Creates `name` with the tables the analysis reads (columns in an unusual order) plus one it
 * skips, and the tables of base, web and mail as the ERP makes them (a copy's neutralisation
 * runs their neutralize.sql). The Enterprise module web_studio (OEEL-1) is in the module
 * table, installed only with `enterprise` (a Community database otherwise).
 */
export function createErpDatabase(pg: Pg15, name: string, baseVersion: string, opts: { enterprise?: boolean } = {}): ErpDatabaseFacts {
  pg.sql("postgres", `create database "${name}"`);
  const modules: [string, string, string | null][] = [
    // name, state, license
    ["base", "installed", "LGPL-3"],
    ["web", "installed", "LGPL-3"],
    ["mail", "installed", "LGPL-3"],
    ["account", "to upgrade", "LGPL-3"],
    ["sale_management", "installed", "LGPL-3"],
    ["l10n_be", "installed", "LGPL-3"],
    ["web_studio", opts.enterprise ? "installed" : "uninstalled", "OEEL-1"],
    ["x_acme_sales", "installed", "LGPL-3"],
    ["acme_reports", "to remove", null],
    ["crm", "uninstalled", "LGPL-3"],
    ["stock", "to install", "LGPL-3"],
    ["uninstallable_mod", "uninstallable", "LGPL-3"],
  ];
  const installed = modules.filter(([, s]) => ["installed", "to upgrade", "to remove"].includes(s)).map(([n]) => n);
  const q = (v: string | null) => (v === null ? "null" : `'${v.replaceAll("'", "''")}'`);
  const files = [1200, 3400, 56000];
  pg.sql(
    name,
    `
create table ir_module_module (id serial primary key, state varchar, author varchar, latest_version varchar, shortdesc jsonb,
  name varchar not null, license varchar, create_date timestamp default now());
insert into ir_module_module (name, state, author, latest_version, license, shortdesc) values
${modules.map(([n, s, l]) => `(${q(n)}, ${q(s)}, 'Odoo S.A.', ${q(s === "uninstalled" ? null : n === "base" ? baseVersion : `${baseVersion.split(".").slice(0, 2).join(".")}.1.0`)}, ${q(l)}, '{"en_US": "A\\tB"}')`).join(",\n")};
create table res_partner (id serial primary key, comment text, name varchar, is_company boolean, active boolean);
insert into res_partner (name, comment, is_company, active)
  select 'Partner ' || i, E'line one\\nline two\\twith tab\\\\ and backslash\\n\\\\.\\n.', i % 3 = 0, true from generate_series(1, 23) i;
insert into res_partner (name, active) values ('Archived', false), ('Archived 2', false);
create table res_users (id serial primary key, share boolean, login varchar, partner_id int, active boolean);
insert into res_users (login, active, share) values ('__system__', false, false), ('admin', true, false), ('alice', true, false),
  ('bob', true, false), ('carol', true, false), ('portal1', true, true), ('portal2', true, true), ('gone', false, false),
  ('default', false, true);
create table ir_attachment (id serial primary key, name varchar, file_size int, db_datas bytea, store_fname varchar, mimetype varchar);
insert into ir_attachment (name, store_fname, file_size, mimetype) values
${files.map((s, i) => `('f${i}', 'ab/ab${String(i).padStart(38, "0")}', ${s}, 'text/plain')`).join(",\n")};
insert into ir_attachment (name, db_datas, file_size) values ('in db', '\\x00ff', 2);
create table mail_message (id serial primary key, body text);
insert into mail_message (body) select E'\\\\.\\n\\\\.' || repeat('x', i % 50) from generate_series(1, 2000) i;
`,
  );
  const major = Number.parseInt(baseVersion, 10);
  pg.sql(name, ["base", "web", "mail"].map((m) => standInTables(m, major)).join("\n"));
  return {
    baseVersion,
    installed: installed.sort(),
    standard: ["account", "base", "l10n_be", "mail", "sale_management", "web", ...(opts.enterprise ? ["web_studio"] : [])],
    custom: ["acme_reports", "x_acme_sales"],
    enterprise: opts.enterprise ? ["web_studio"] : [],
    internalUsers: 4,
    activePartners: 23,
    attachmentBytes: files.reduce((a, b) => a + b, 0),
    attachmentFiles: files.length,
  };
}

/** File-store files named by their SHA-1, as the ERP stores them. */
export function fileStoreFiles(sizes: number[]): { name: string; bytes: Buffer }[] {
  return sizes.map((size) => {
    const bytes = randomBytes(size);
    const sha = createHash("sha1").update(bytes).digest("hex");
    return { name: `filestore/${sha.slice(0, 2)}/${sha}`, bytes };
  });
}

/** A zip of the members in order, deflated as the vendor's backups are. */
export async function zipOf(members: { name: string; bytes: Buffer; store?: boolean }[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const m of members) zip.addBuffer(m.bytes, m.name, { compress: !m.store });
  zip.end();
  const parts: Buffer[] = [];
  for await (const chunk of zip.outputStream as Readable) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** A tar (gzipped unless `gzip` is false) of the members in order. */
export async function tarOf(members: { name: string; bytes: Buffer }[], gzip = true): Promise<Buffer> {
  const pack = tar.pack();
  for (const m of members) pack.entry({ name: m.name, size: m.bytes.length }, m.bytes);
  pack.finalize();
  const parts: Buffer[] = [];
  const out = gzip ? (pack as unknown as Readable).pipe(createGzip()) : (pack as unknown as Readable);
  for await (const chunk of out) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** A manifest.json as the database manager writes it. */
export function manifestOf(dbName: string, version: string, modules: string[], pgVersion = "15.0"): Buffer {
  const major = version.replace(/^saas~/, "").split(".")[0];
  return Buffer.from(
    JSON.stringify({ odoo_dump: "1", db_name: dbName, version, version_info: [Number(major), 0, 0, "final", 0, ""], major_version: `${major}.0`, pg_version: pgVersion, modules: Object.fromEntries(modules.map((m) => [m, `${version}.1.0`])) }, null, 4),
  );
}

/** A BackupSource over bytes in memory, served in small chunks; counts whole reads and ranged reads. */
export function bufferSource(bytes: Buffer, chunk = 4093): BackupSource & { whole: number; ranged: number; rangedBytes: number } {
  const s = {
    size: bytes.length,
    whole: 0,
    ranged: 0,
    rangedBytes: 0,
    async open(range?: { start: number; end: number }) {
      if (range) {
        s.ranged++;
        s.rangedBytes += range.end - range.start + 1;
      } else s.whole++;
      const part = range ? bytes.subarray(range.start, range.end + 1) : bytes;
      return Readable.from(
        (function* () {
          for (let i = 0; i < part.length; i += chunk) yield part.subarray(i, i + chunk);
        })(),
      );
    },
  };
  return s;
}
