// The analysis against real backups: a real PostgreSQL 15 holds ERP-shaped databases,
// pg_dump dumps them, and the tests pack them as the vendor's tools do (zip with manifest and
// file store, tar.gz, plain SQL, custom format), plus bad files. Each result is compared with
// the facts the fixture was made with.
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { erpCustomDump } from "../../../../../../packages/protocol/src/pg-custom-archive.test-helpers.ts";
import { createLocalObjectStore } from "../../../lib/object-store/local-store.ts";
import { analyzeBackup, BackupAnalysisError, enterpriseModules } from "./analyze.ts";
import {
  bufferSource,
  createErpDatabase,
  fileStoreFiles,
  manifestOf,
  startPg15,
  tarOf,
  zipOf,
  type ErpDatabaseFacts,
  type Pg15,
} from "./backup-fixtures.test-helpers.ts";

let pg: Pg15;
let v17: ErpDatabaseFacts;
let v16: ErpDatabaseFacts;
let dump17: Buffer;
let dump16: Buffer;
let enterprise17: ErpDatabaseFacts;
let dumpEnterprise: Buffer;

beforeAll(async () => {
  pg = await startPg15();
  v17 = createErpDatabase(pg, "acme_prod", "17.0.1.3");
  v16 = createErpDatabase(pg, "acme16", "16.0.1.3");
  dump17 = pg.dump("acme_prod");
  dump16 = pg.dump("acme16");
  enterprise17 = createErpDatabase(pg, "acme_ee", "17.0.1.3", { enterprise: true });
  dumpEnterprise = pg.dump("acme_ee");
});

/** A dump as a newer pg_dump writes it: its header's versions replaced, and 17's transaction_timeout. */
function asDumpedBy(dump: Buffer, version: string): Buffer {
  return Buffer.from(
    dump
      .toString("utf8")
      .replace(/^-- Dumped from database version .*$/m, `-- Dumped from database version ${version}`)
      .replace(/^-- Dumped by pg_dump version .*$/m, `-- Dumped by pg_dump version ${version}`)
      .replace(/^SET statement_timeout = 0;$/m, "SET statement_timeout = 0;\nSET transaction_timeout = 0;"),
  );
}
afterAll(async () => {
  await pg?.stop();
});

async function failure(bytes: Buffer): Promise<BackupAnalysisError> {
  const err = await analyzeBackup(bufferSource(bytes)).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BackupAnalysisError);
  return err as BackupAnalysisError;
}

describe("analyzeBackup on well-formed backups", () => {
  it("reads a zip made like the database manager's: manifest, dump, file store", async () => {
    const files = fileStoreFiles([1000, 20000, 300]);
    const bytes = await zipOf([
      { name: "dump.sql", bytes: dump17 },
      { name: "manifest.json", bytes: manifestOf("acme_prod", "17.0+e-20250703", v17.installed, "15.0") },
      ...files,
    ]);
    const source = bufferSource(bytes);
    const a = await analyzeBackup(source);
    expect(a).toMatchObject({
      format: "zip",
      erp_version: "17.0",
      erp_version_source: "manifest",
      database_name: "acme_prod",
      database_size_bytes: dump17.length,
      filestore_size_bytes: 21300,
      total_size_bytes: dump17.length + 21300,
      total_modules: v17.installed.length,
      standard_modules: v17.standard,
      custom_modules: v17.custom,
      user_count: v17.internalUsers,
      partner_count: v17.activePartners,
      dump_path: "dump.sql",
      filestore: { kind: "directory", path: "filestore", file_count: 3 },
      has_manifest: true,
      warnings: [],
    });
    expect(a.postgres.server_version).toMatch(/^15\./);
    expect(a.postgres.pg_dump_version).toMatch(/^15\./);
    expect(a.postgres.manifest_pg_version).toBe("15.0");
    expect(a.recommended_cpu).toBe(1);
    expect(a.recommended_ram_mb).toBeGreaterThanOrEqual(1024);
    expect(a.recommended_disk_gb).toBeGreaterThanOrEqual(10);
    expect(a.monthly_savings).toBeCloseTo(a.vendor_equivalent_cost - a.estimated_monthly_cost, 2);
    // The zip is read through ranges: never opened whole.
    expect(source.whole).toBe(0);
  });

  it("reads a zip straight from the backup store (local), through its ranged gets", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "berth-analysis-store-"));
    try {
      const store = createLocalObjectStore(dir);
      const bytes = await zipOf([{ name: "dump.sql", bytes: dump17 }, { name: "manifest.json", bytes: manifestOf("acme_prod", "17.0", v17.installed) }, ...fileStoreFiles([10, 20])]);
      const stored = await store.put("migrations/m1/backup", Readable.from([bytes]));
      const a = await analyzeBackup({
        size: stored.size_bytes,
        open: async (range) => (await store.get("migrations/m1/backup", range ? { range } : {})) as Readable,
      });
      expect(a).toMatchObject({ format: "zip", erp_version: "17.0", database_name: "acme_prod", filestore_size_bytes: 30, user_count: 4 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("walks a central directory of thousands of file-store entries in a few ranged reads", async () => {
    const files = Array.from({ length: 6000 }, (_, i) => ({ name: `filestore/${String(i % 256).padStart(2, "0")}/f${i}`, bytes: Buffer.from([i % 256]) }));
    const source = bufferSource(await zipOf([{ name: "dump.sql", bytes: dump17 }, ...files]));
    const a = await analyzeBackup(source);
    expect(a.filestore).toEqual({ kind: "directory", path: "filestore", file_count: 6000 });
    expect(a.filestore_size_bytes).toBe(6000);
    expect(source.ranged).toBeLessThan(10);
  });

  it("reads a tar.gz with the dump after the file store, version from the dump's base module", async () => {
    const files = fileStoreFiles([5000, 7000]);
    const a = await analyzeBackup(bufferSource(await tarOf([...files, { name: "./dump.sql", bytes: dump17 }])));
    expect(a).toMatchObject({
      format: "tar.gz",
      erp_version: "17.0",
      erp_version_source: "dump",
      database_name: null,
      database_size_bytes: dump17.length,
      filestore_size_bytes: 12000,
      custom_modules: v17.custom,
      user_count: 4,
      partner_count: 23,
      dump_path: "dump.sql",
      has_manifest: false,
    });
  });

  it("reads a plain tar", async () => {
    const a = await analyzeBackup(bufferSource(await tarOf([{ name: "backup/dump.sql", bytes: dump16 }], false)));
    expect(a).toMatchObject({ format: "tar", erp_version: "16.0", dump_path: "backup/dump.sql", filestore: null });
  });

  it("reads a bare SQL dump: file store size from the attachments, with a warning", async () => {
    const a = await analyzeBackup(bufferSource(dump16, 1));
    expect(a).toMatchObject({
      format: "sql",
      erp_version: "16.0",
      dump_path: null,
      filestore: null,
      filestore_size_bytes: v16.attachmentBytes,
      standard_modules: v16.standard,
      custom_modules: v16.custom,
      user_count: 4,
      partner_count: 23,
    });
    expect(a.warnings.join()).toMatch(/no file store, but 3 attachments/);
  });

  it("tolerates the \\restrict lines of recent pg_dump releases", async () => {
    const wrapped = Buffer.concat([Buffer.from("\\restrict abc123\n"), dump17, Buffer.from("\\unrestrict abc123\n")]);
    const a = await analyzeBackup(bufferSource(await zipOf([{ name: "dump.sql", bytes: wrapped }])));
    expect(a).toMatchObject({ erp_version: "17.0", user_count: 4, partner_count: 23, total_modules: v17.installed.length });
  });
});

describe("analyzeBackup says what the target must have", () => {
  it("a Community backup: no Enterprise modules; PostgreSQL of its dump (15) or later", async () => {
    const a = await analyzeBackup(bufferSource(await zipOf([{ name: "dump.sql", bytes: dump17 }])));
    expect(a).toMatchObject({ enterprise_modules: [], postgres_major_required: 15 });
  });

  it("Enterprise modules (license OEEL-1) are listed, with a warning", async () => {
    const a = await analyzeBackup(bufferSource(await zipOf([{ name: "dump.sql", bytes: dumpEnterprise }, { name: "manifest.json", bytes: manifestOf("acme_ee", "17.0+e-20250703", enterprise17.installed) }])));
    expect(a.enterprise_modules).toEqual(["web_studio"]);
    expect(a.standard_modules).toContain("web_studio");
    expect(a.warnings).toContainEqual(expect.stringMatching(/^1 installed module is Enterprise \(web_studio\): the migrated environment needs the Enterprise add-ons/));
  });

  it("web_enterprise is Enterprise whatever its license; other licenses are not", () => {
    expect(enterpriseModules(new Map([["web_enterprise", null], ["sale", "LGPL-3"], ["helpdesk", "OEEL-1"], ["acme", "OPL-1"]]))).toEqual(["helpdesk", "web_enterprise"]);
  });

  it("a dump by pg_dump 17 needs PostgreSQL 17; the ERP version's minimum when the dump is older (19.0: 13)", async () => {
    const newer = await analyzeBackup(bufferSource(asDumpedBy(dump17, "17.2")));
    expect(newer).toMatchObject({ postgres_major_required: 17, postgres: { pg_dump_version: "17.2", server_version: "17.2" } });
    expect((await analyzeBackup(bufferSource(asDumpedBy(dump17, "12.20")))).postgres_major_required).toBe(12);
    const v19 = await analyzeBackup(bufferSource(await zipOf([{ name: "dump.sql", bytes: asDumpedBy(dump17, "12.20") }, { name: "manifest.json", bytes: manifestOf("acme", "19.0", v17.installed, "12.20") }])));
    expect(v19).toMatchObject({ erp_version: "19.0", postgres_major_required: 13 });
  });
});

describe("analyzeBackup refuses what cannot be migrated", () => {
  it("a dump without the ERP's tables, even with a manifest that says 17.0", async () => {
    const other = Buffer.from("--\n-- PostgreSQL database dump\n--\n-- Dumped by pg_dump version 16.4\nCREATE TABLE public.invoices (id integer);\nCOPY public.invoices (id) FROM stdin;\n1\n\\.\n");
    const err = await failure(await zipOf([{ name: "dump.sql", bytes: other }, { name: "manifest.json", bytes: manifestOf("shop", "17.0", ["base"]) }]));
    expect(err.code).toBe("erp_tables_missing");
    expect(err.message).toMatch(/^not a database of the ERP: the dump has no ir_module_module, res_partner, res_users tables/);
  });

  it("a dump with the module table but not the rest of the ERP's (a partial pg_dump -t)", async () => {
    const partial = Buffer.from(
      [
        "-- PostgreSQL database dump",
        "CREATE TABLE public.ir_module_module (id integer, name character varying, state character varying, latest_version character varying, license character varying);",
        "CREATE TABLE res_partner (id integer, name character varying);",
        "COPY public.ir_module_module (id, name, state, latest_version, license) FROM stdin;",
        "1\tbase\tinstalled\t17.0.1.3\tLGPL-3",
        "\\.",
        "",
      ].join("\n"),
    );
    const err = await failure(partial);
    expect(err.code).toBe("erp_tables_missing");
    expect(err.message).toMatch(/the dump has no res_users table,/);
  });

  it("a deprecated version (15.0 in the manifest)", async () => {
    const err = await failure(await zipOf([{ name: "dump.sql", bytes: dump17 }, { name: "manifest.json", bytes: manifestOf("old", "15.0", ["base"]) }]));
    expect(err.code).toBe("erp_version_deprecated");
    expect(err.message).toMatch(/^ERP version 15\.0 is deprecated/);
  });

  it("an intermediary SaaS version", async () => {
    const err = await failure(await zipOf([{ name: "dump.sql", bytes: dump17 }, { name: "manifest.json", bytes: manifestOf("online", "saas~17.4", ["base"]) }]));
    expect(err.code).toBe("saas_version");
    expect(err.message).toMatch(/^intermediary SaaS version saas~17\.4 cannot be hosted outside the vendor's online service/);
  });

  it("junk, an empty file, an empty zip, a zip without a dump", async () => {
    expect((await failure(Buffer.from("hello, this is not a backup\x00\x01"))).code).toBe("not_a_backup");
    expect((await failure(Buffer.alloc(0))).code).toBe("empty_file");
    expect((await failure(await zipOf([]))).code).toBe("empty_archive");
    const noDump = await failure(await zipOf([{ name: "manifest.json", bytes: manifestOf("x", "17.0", []) }, ...fileStoreFiles([10])]));
    expect(noDump.code).toBe("no_database_dump");
    expect(noDump.message).toMatch(/^no database dump found/);
  });

  it("a zip whose dump is junk, or an SQL file that is not the ERP's", async () => {
    expect((await failure(await zipOf([{ name: "dump.sql", bytes: Buffer.from([0, 1, 2, 3]) }]))).code).toBe("not_a_backup");
    const other = await failure(Buffer.from("--\n-- PostgreSQL database dump\n--\nCREATE TABLE t (a int);\n"));
    expect(other.code).toBe("erp_tables_missing");
    expect(other.message).toMatch(/no ir_module_module, res_partner, res_users tables/);
  });

  it("a gzip file that holds no tar archive", async () => {
    const err = await failure(gzipSync(dump17));
    expect(err.code).toBe("not_a_backup");
    expect(err.message).toMatch(/does not hold a tar archive/);
  });

  it("a truncated tar.gz and a truncated zip", async () => {
    const whole = await tarOf([{ name: "dump.sql", bytes: dump17 }]);
    const err = await failure(whole.subarray(0, Math.floor(whole.length / 2)));
    expect(err.code).toBe("corrupt_archive");
    expect(err.message).toMatch(/truncated/);
    const zip = await zipOf([{ name: "dump.sql", bytes: dump17 }]);
    expect((await failure(zip.subarray(0, zip.length - 30))).code).toBe("corrupt_archive");
  });

  it("the custom format it cannot read (lz4-compressed data) with a clear message; pg_dump's own is read (custom-dump-scanner.test.ts)", async () => {
    const custom = pg.dump("acme_prod", "custom");
    expect(await analyzeBackup(bufferSource(custom))).toMatchObject({ format: "pg_custom", erp_version: "17.0", user_count: v17.internalUsers });
    const err = await failure(erpCustomDump([], { minor: 15, algorithm: 2 }));
    expect(err.code).toBe("unsupported_dump_format");
    expect(err.message).toMatch(/zip format/);
  });

  it("a zip bomb and a gzip bomb, before inflating them", async () => {
    const zeros = Buffer.alloc(64 << 20, 0x61);
    const started = Date.now();
    const err = await failure(await zipOf([{ name: "dump.sql", bytes: zeros }]));
    expect(err.code).toBe("archive_too_large");
    const gz = await failure(await tarOf([{ name: "dump.sql", bytes: Buffer.concat([Buffer.from("-- PostgreSQL database dump\n"), zeros, zeros]) }]));
    expect(gz.code).toBe("archive_too_large");
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("a zip that lies about a member's size is stopped at the declared size", async () => {
    // A stored member whose central directory claims 10 bytes while 2000 follow.
    const bytes = await zipOf([{ name: "dump.sql", bytes: Buffer.concat([Buffer.from("-- PostgreSQL database dump\n"), Buffer.alloc(2000, 0x61)]), store: true }]);
    const cd = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    bytes.writeUInt32LE(10, cd + 20); // compressed size
    bytes.writeUInt32LE(10, cd + 24); // uncompressed size
    const err = await failure(bytes);
    expect(["corrupt_archive", "not_a_backup"]).toContain(err.code);
  });

  it("path traversal names are reported, never used", async () => {
    const zip = await zipOf([{ name: "xx/evil.sql", bytes: Buffer.from("-- x\n") }, { name: "dump.sql", bytes: dump17 }]);
    // yazl refuses to write "../"; put it in the bytes (names are outside the CRC).
    const patched = Buffer.from(zip.toString("latin1").replaceAll("xx/evil.sql", "../evil.sql"), "latin1");
    const a = await analyzeBackup(bufferSource(patched));
    expect(a.dump_path).toBe("dump.sql");
    expect(a.warnings).toContain('member "../evil.sql" has an unsafe name and was ignored');

    const onlyEvil = Buffer.from((await zipOf([{ name: "xx/dump.sql", bytes: dump17 }])).toString("latin1").replaceAll("xx/dump.sql", "../dump.sql"), "latin1");
    expect((await failure(onlyEvil)).code).toBe("no_database_dump");
    const tarEvil = await analyzeBackup(bufferSource(await tarOf([{ name: "../../etc/dump.sql", bytes: Buffer.from("x") }, { name: "dump.sql", bytes: dump17 }])));
    expect(tarEvil.warnings[0]).toMatch(/unsafe name/);
  });

  it("stops when the signal is aborted", async () => {
    const controller = new AbortController();
    controller.abort();
    const err = await analyzeBackup(bufferSource(dump17), { signal: controller.signal }).catch((e: unknown) => e);
    expect((err as BackupAnalysisError).code).toBe("aborted");
  });
});
