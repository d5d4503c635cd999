// The psql script lexer: what it refuses and lets through, the same whatever the chunking (a
// dump arrives in pieces split anywhere), and COPY data read only after a real COPY statement.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PsqlScript, type PsqlFinding } from "./psql-script.ts";

function scan(text: string | Buffer, cuts: number[] = []): { findings: PsqlFinding[]; allowed: unknown[]; owners: unknown[]; rows: number } {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  const s = new PsqlScript();
  let at = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b).concat(bytes.length)) {
    s.push(bytes.subarray(at, cut));
    at = cut;
  }
  s.end();
  return { findings: s.findings, allowed: s.allowedMeta, owners: s.ownerChanges, rows: s.copyRows };
}
const kinds = (text: string) => scan(text).findings.map((f) => `${f.kind}@${f.line}`);

const TRICKY: [string, string[]][] = [
  ["SELECT 1;\n\\! touch x\n", ["meta_command@2"]],
  ["  \\! x\n", ["meta_command@1"]],
  ["SELECT 1; \\! x\n", ["meta_command@1"]],
  ["SELECT 'a''b'; \\! x\n", ["meta_command@1"]],
  ["/* COPY t FROM stdin; */\n\\! x\n", ["meta_command@2"]],
  ["/* a /* nested */ COPY t FROM stdin; */\n\\! x\n", ["meta_command@2"]],
  ["SELECT '\nCOPY t FROM stdin;\n';\n\\! x\n", ["meta_command@4"]],
  ["SELECT $$\nCOPY t FROM stdin;\n$$;\n\\! x\n", ["meta_command@4"]],
  ["SELECT $a$ $b$ \\! $a$;\n", []],
  ["SELECT $a$ x $a $a$ \\! y;\n", ["meta_command@1"]],
  ["SELECT E'\\' \\! x';\n", []],
  ["SELECT 'a\\'; \\! x\n", ["meta_command@1"]],
  ["SELECT E'a'\n'\\' \\! x';\n", []],
  ["SELECT 'a' -- c\n'b'; \\! x\n", ["meta_command@2"]],
  ["SELECT \"a\\\"; \\! x\n", ["meta_command@1"]],
  ["SELECT 1 -- \\! not a command\n;\n", []],
  ["SELECT 1 -- comment\r\\! x\n", ["meta_command@1"]],
  ["SELECT a$$b FROM t; \\! x\n", ["meta_command@1"]],
  ["SELECT 1e'x';\n", ["ambiguous@1"]],
  ["SELECT 0x$$ x $$;\n", ["ambiguous@1"]],
  ["COPY t (a) FROM stdin;\n\\! not a command\n\\\\.\n\\.x\n\\.\n\\! x\n", ["meta_command@6"]],
  ["copy t from STDIN with (format csv);\n\\!\n\\.\r\nSELECT 1;\n", []],
  ["COPY t FROM stdin (\n;\n\\! x\n", ["meta_command@3"]],
  ["CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; COPY t FROM stdin; END;\n\\! x\n", ["meta_command@2"]],
  ["\\restrict abc123\nSELECT 1;\n\\unrestrict abc123\n", []],
  ["SELECT 1; \\restrict abc\n", ["meta_command@1"]],
  ["\\connect other\n", ["meta_command@1"]],
  ["SELECT :'DBNAME', x::text, a[1:2], :foo;\n", ["psql_variable@1"]],
  ["COPY t TO PROGRAM 'id';\n", ["copy_program@1"]],
  ["COPY t FROM '/etc/passwd';\n", ["copy_file@1"]],
  ["COPY (SELECT 1 FROM t) TO STDOUT;\n", []],
  ["CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE 'c' AS 'x';\n", ["untrusted_language@1"]],
  ["CREATE TABLE t (language text, x int);\n", []],
  ["DO $$ BEGIN NULL; END $$;\n", ["dynamic_code@1"]],
  ["CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;\nCREATE EXTENSION unaccent;\nCREATE EXTENSION \"adminpack\";\n", ["extension@3"]],
  ["ALTER SYSTEM SET x = 1;\n", ["alter_system@1"]],
  ["SET ROLE odoo;\nSET LOCAL SESSION AUTHORIZATION x;\nSET search_path = role;\n", ["role_change@1"]],
  ["ALTER ROLE odoo SUPERUSER;\nDROP ROLE x;\nGRANT pg_execute_server_program TO x;\nGRANT SELECT ON t TO x;\n", ["role_change@1", "role_change@2", "role_change@3"]],
  ["SELECT pg_catalog.lo_export(1, '/x');\nSELECT \"pg_read_file\"('/etc/passwd');\n", ["server_function@1", "server_function@2"]],
  ["LOAD 'x';\n", ["load@1"]],
  ["SET client_encoding = 'UTF8';\nSET standard_conforming_strings = on;\nSELECT pg_catalog.set_config('search_path', '', false);\n", []],
  ["SET standard_conforming_strings = off;\nSELECT set_config('client_encoding', 'SJIS', false);\nSET NAMES 'BIG5';\n", ["session_setting@1", "session_setting@2", "session_setting@3"]],
  ["COPY t FROM stdin; SELECT 1;\n", ["ambiguous@1"]],
];

describe("PsqlScript", () => {
  for (const [text, expected] of TRICKY) {
    it(`${JSON.stringify(text).slice(0, 70)} → ${expected.join(", ") || "nothing"}`, () => {
      expect(kinds(text)).toEqual(expected);
    });
  }

  it("finds the same at every chunk boundary", () => {
    for (const [text] of TRICKY) {
      const whole = scan(text);
      for (let cut = 1; cut < Buffer.byteLength(text); cut++) expect(scan(text, [cut]), `${JSON.stringify(text)} cut at ${cut}`).toEqual(whole);
    }
  });

  it("finds the same however the dump is split (property)", () => {
    const dump = Buffer.from(TRICKY.map(([t]) => t).join(""));
    const whole = scan(dump);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: dump.length - 1 }), { maxLength: 40 }), (cuts) => {
        expect(scan(dump, cuts)).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });

  it("reads COPY data only between a real COPY ... FROM stdin; and its \\. line, and counts the rows", () => {
    const r = scan("COPY public.t (a, b) FROM stdin;\na\\\\b\t\\.\n\\\\.\nx\n\\.\n");
    expect(r).toMatchObject({ findings: [], rows: 3 });
  });

  it("marks ALTER ... OWNER TO statements, and pg_dump's own \\restrict lines, by byte range", () => {
    const text = "\\restrict k1\nALTER TABLE public.t OWNER TO odoo;\nALTER TABLE t ADD COLUMN owner text;\nALTER FUNCTION f(a integer) OWNER TO \"X\";\n";
    const r = scan(text);
    expect(r.allowed).toEqual([{ start: 0, end: 12 }]);
    expect((r.owners as { start: number; end: number }[]).map((o) => text.slice(o.start, o.end))).toEqual([
      "ALTER TABLE public.t OWNER TO odoo;",
      'ALTER FUNCTION f(a integer) OWNER TO "X";',
    ]);
  });

  it("refuses a NUL byte (psql drops the rest of its line)", () => {
    expect(scan(Buffer.from("SELECT 1;\0'\n\\! x\n")).findings.map((f) => f.kind)).toEqual(["ambiguous", "meta_command"]);
  });
});
