// Custom-format dumps (pg_dump -Fc) through the whole analysis: real archives of this machine's
// pg_dump (15) of ERP-shaped databases give the facts their plain dumps give; what pg_restore
// would run of each TOC entry is read for hazards as a plain dump is (a real extension and
// function, a hand-written plpython3u function and COPY ... TO PROGRAM); and archives that
// end early, lie, are lz4-compressed or expand without bound are refused with a clear code.
import { createHash } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { erpCustomDump } from "../../../../../../packages/protocol/src/pg-custom-archive.test-helpers.ts";
import { DEFAULT_INFLATE_LIMITS } from "./analysis-limits.ts";
import { analyzeBackup, BackupAnalysisError, type BackupAnalysis } from "./analyze.ts";
import { bufferSource, createErpDatabase, startPg15, tarOf, zipOf, type Pg15 } from "./backup-fixtures.test-helpers.ts";

let pg: Pg15;
let plain: BackupAnalysis;

beforeAll(async () => {
  pg = await startPg15();
  createErpDatabase(pg, "acme_prod", "17.0.1.3", { enterprise: true });
  plain = await analyzeBackup(bufferSource(pg.dump("acme_prod")));
});

afterAll(async () => {
  await pg?.stop();
});

async function failure(bytes: Buffer, limits = DEFAULT_INFLATE_LIMITS): Promise<BackupAnalysisError> {
  const err = await analyzeBackup(bufferSource(bytes), { limits }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(BackupAnalysisError);
  return err as BackupAnalysisError;
}

/** The facts both formats must agree on. */
const facts = (a: BackupAnalysis) => ({
  erp_version: a.erp_version,
  database_name: a.database_name,
  standard_modules: a.standard_modules,
  custom_modules: a.custom_modules,
  enterprise_modules: a.enterprise_modules,
  user_count: a.user_count,
  partner_count: a.partner_count,
  filestore_size_bytes: a.filestore_size_bytes,
  postgres: a.postgres,
  postgres_major_required: a.postgres_major_required,
  dump_hazard_count: a.dump_hazard_count,
});

describe("a custom-format dump made by pg_dump", () => {
  it("gives the plain dump's facts, compressed or not, bare or as dump.dump in a zip or tar.gz", async () => {
    expect(plain.user_count).toBeGreaterThan(0);
    for (const args of [[], ["--compress=0"]]) {
      const custom = pg.dump("acme_prod", "custom", args);
      const bare = await analyzeBackup(bufferSource(custom));
      expect(bare).toMatchObject({ format: "pg_custom", dump_path: null, dump_hazards: [] });
      // The archive's header names the database, which a plain dump without --create does not.
      expect(plain.database_name).toBeNull();
      expect(facts(bare)).toEqual({ ...facts(plain), database_name: "acme_prod" });
      // The size as restored: the rows and the SQL, as a plain dump holds them (less its comments).
      expect(bare.database_size_bytes / plain.database_size_bytes).toBeGreaterThan(0.8);
      expect(bare.database_size_bytes / plain.database_size_bytes).toBeLessThan(1.05);
      const zipped = await analyzeBackup(bufferSource(await zipOf([{ name: "dump.dump", bytes: custom }])));
      expect(zipped).toMatchObject({ format: "zip", dump_path: "dump.dump" });
      expect(facts(zipped)).toEqual(facts(bare));
      expect(facts(await analyzeBackup(bufferSource(await tarOf([{ name: "backup/acme.dump", bytes: custom }]))))).toEqual(facts(bare));
    }
  });

  it("lists what pg_restore would run on the server: a real extension outside the ERP's and a function reading the server's files", async () => {
    createErpDatabase(pg, "acme_hostile", "17.0.1.3");
    pg.sql("acme_hostile", "CREATE EXTENSION file_fdw; CREATE FUNCTION public.peek() RETURNS text LANGUAGE plpgsql AS $$ BEGIN RETURN pg_read_file('/etc/passwd'); END $$;");
    const a = await analyzeBackup(bufferSource(pg.dump("acme_hostile", "custom")));
    expect(a.dump_hazard_count).toBe(2);
    expect(a.dump_hazards).toEqual([
      { line: 1, kind: "extension", text: expect.stringMatching(/^EXTENSION file_fdw \(TOC entry \d+\): .*CREATE EXTENSION IF NOT EXISTS file_fdw/) },
      { line: expect.any(Number), kind: "server_function", text: expect.stringMatching(/^FUNCTION peek\(\) \(TOC entry \d+\): .*pg_read_file/) },
    ]);
  });
});

describe("a custom-format dump written by hand", () => {
  it("a function in an untrusted language and a COPY ... TO PROGRAM before a table's rows are listed; each entry is read by itself", async () => {
    const a = await analyzeBackup(
      bufferSource(
        erpCustomDump([
          { dumpId: 40, desc: "FUNCTION", tag: "pwn()", namespace: "public", defn: "CREATE FUNCTION public.pwn() RETURNS integer\n    LANGUAGE plpython3u\n    AS $$import os; os.system('id')$$;\n" },
          // An open quote in one entry does not hide the next: pg_restore sends each by itself.
          { dumpId: 41, desc: "COMMENT", tag: "x", defn: "COMMENT ON TABLE public.res_users IS 'open;\n" },
          { dumpId: 42, desc: "TABLE DATA", tag: "res_partner", copyStmt: "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned';\n", data: "" },
        ]),
      ),
    );
    expect(a.format).toBe("pg_custom");
    expect(a.dump_hazards).toEqual([
      { line: 2, kind: "untrusted_language", text: expect.stringMatching(/^FUNCTION pwn\(\) \(TOC entry 40\): .*plpython3u/) },
      { line: 1, kind: "copy_program", text: expect.stringMatching(/^TABLE DATA res_partner \(TOC entry 42\): .*TO PROGRAM/) },
    ]);
    expect(a.dump_hazard_count).toBe(2);
    expect(a).toMatchObject({ erp_version: "17.0", user_count: 1, partner_count: 1 });
  });

  it("archives of every version pg_dump 10 to 18 writes are read", async () => {
    for (const minor of [12, 13, 14, 15, 16]) {
      expect(await analyzeBackup(bufferSource(erpCustomDump([], { minor, version: "16.0.1.3" })))).toMatchObject({ format: "pg_custom", erp_version: "16.0", dump_hazard_count: 0 });
    }
  });

  it("a truncated, lying, lz4-compressed or exploding archive is refused with a clear code", async () => {
    const whole = erpCustomDump();
    const cut = await failure(whole.subarray(0, whole.length - 20));
    expect(cut).toMatchObject({ code: "corrupt_archive", message: expect.stringMatching(/^the custom-format dump cannot be read: the archive ends early/) });
    expect(await failure(await zipOf([{ name: "dump.dump", bytes: erpCustomDump([], { statedEntries: 999_999_999 }) }]))).toMatchObject({ code: "corrupt_archive", message: expect.stringMatching(/claims 999999999 TOC entries/) });
    expect(await failure(erpCustomDump([], { lyingDefnLength: 2 ** 31 - 1 }))).toMatchObject({ code: "corrupt_archive", message: expect.stringMatching(/TOC string of 2147483647 bytes/) });
    expect(await failure(erpCustomDump([], { minor: 15, algorithm: 2 }))).toMatchObject({ code: "unsupported_dump_format", message: expect.stringMatching(/lz4.*zip format/) });
    expect(await failure(erpCustomDump([], { minor: 11 }))).toMatchObject({ code: "unsupported_dump_format", message: expect.stringMatching(/version 1\.11-0 is not read/) });
    const bomb = erpCustomDump([{ dumpId: 50, desc: "TABLE DATA", tag: "t", copyStmt: "COPY public.t (a) FROM stdin;\n", data: "x".repeat(8 << 20) }]);
    expect(bomb.length).toBeLessThan(64 << 10);
    expect(await failure(bomb, { ...DEFAULT_INFLATE_LIMITS, maxMemberBytes: 4 << 20 })).toMatchObject({ code: "archive_too_large", message: expect.stringMatching(/would expand/) });
    const garbage = Buffer.from(whole);
    garbage.fill(0x55, whole.length - 200, whole.length - 100);
    expect(["corrupt_archive"]).toContain((await failure(garbage)).code);
  });
});

it("an archive with any bytes overwritten or cut anywhere is analysed or refused with a code, never anything else", async () => {
  // Found a stream's inflate error unheard (ending the process) when the archive failed elsewhere.
  // A table whose compressed rows take several chunks: inflating runs while the next is read.
  const rows = Array.from({ length: 3000 }, (_, i) => `${i}\t${createHash("sha1").update(String(i)).digest("hex")}\n`).join("");
  const messages = { dumpId: 60, desc: "TABLE DATA", tag: "mail_message", copyStmt: "COPY public.mail_message (id, body) FROM stdin;\n", data: rows };
  const archives = [erpCustomDump(), erpCustomDump([], { compress: false }), erpCustomDump([messages])];
  const codes: Record<string, number> = {};
  await fc.assert(
    fc.asyncProperty(
      fc.nat(2),
      fc.array(fc.record({ at: fc.nat(), byte: fc.nat(255) }), { minLength: 1, maxLength: 4 }),
      fc.option(fc.nat(), { nil: undefined }),
      async (which, edits, cut) => {
        const bytes = Buffer.from(archives[which]!);
        for (const { at, byte } of edits) bytes[5 + (at % (bytes.length - 5))] = byte;
        const outcome = await analyzeBackup(bufferSource(cut === undefined ? bytes : bytes.subarray(0, 5 + (cut % (bytes.length - 5))))).then(
          () => "analysed",
          (e: unknown) => (e instanceof BackupAnalysisError ? e.code : e),
        );
        expect(typeof outcome).toBe("string");
        codes[outcome as string] = (codes[outcome as string] ?? 0) + 1;
      },
    ),
    { numRuns: 1500, seed: 20_261_207 },
  );
  expect(Object.keys(codes)).toEqual(expect.arrayContaining(["analysed", "corrupt_archive"]));
}, 120_000);
