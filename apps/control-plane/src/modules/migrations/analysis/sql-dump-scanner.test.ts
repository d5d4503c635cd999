// The dump scanner and the COPY text format: facts do not depend on where chunks split, end
// markers are not confused with escaped data, columns are found by name.
import { describe, expect, it } from "vitest";
import { parseCopyHeader, splitCopyRow, unescapeCopyField } from "./copy-text.ts";
import { SqlDumpScanner } from "./sql-dump-scanner.ts";

const DUMP = [
  "--",
  "-- PostgreSQL database dump",
  "--",
  "\\restrict k3y",
  "-- Dumped from database version 16.4 (Debian 16.4-1)",
  "-- Dumped by pg_dump version 17.6",
  "CREATE DATABASE \"Acme Prod\" WITH TEMPLATE = template0;",
  "COPY public.mail_message (id, body) FROM stdin;",
  "1\t\\\\.",
  "2\tx\\n\\\\.\\nCOPY public.res_users (id) FROM stdin;",
  "\\.",
  "COPY public.empty_table (id) FROM stdin;",
  "\\.",
  "COPY public.ir_module_module (state, \"name\", latest_version, license) FROM stdin;",
  "installed\tbase\t17.0.1.3\tLGPL-3",
  "to upgrade\tsale\t17.0.1.0\t\\N",
  "to remove\tmy\\tmod\t\\N\tOPL-1",
  "uninstalled\tcrm\t\\N\tLGPL-3",
  "\\.",
  "COPY public.res_users (share, active, login) FROM stdin;",
  "f\tt\tadmin",
  "t\tt\tportal",
  "f\tf\t__system__",
  "\\N\tt\tno_share_value",
  "\\.",
  "COPY public.res_partner (name, active) FROM stdin;",
  "A\tt",
  "B\tf",
  "C\\\\\tt",
  "\\.",
  "COPY public.ir_attachment (store_fname, file_size) FROM stdin;",
  "ab/ab01\t100",
  "\\N\t5",
  "cd/cd02\t\\N",
  "\\.",
  "\\unrestrict k3y",
  "",
].join("\n");

function scan(chunk: number) {
  const s = new SqlDumpScanner();
  const bytes = Buffer.from(DUMP);
  for (let i = 0; i < bytes.length; i += chunk) s.push(bytes.subarray(i, i + chunk));
  const f = s.facts();
  return { ...f, installed_modules: Object.fromEntries(f.installed_modules) };
}

describe("SqlDumpScanner", () => {
  it("finds the same facts whatever the chunk size", () => {
    const whole = scan(1 << 20);
    expect(whole).toMatchObject({
      looks_like_pg_dump: true,
      server_version: "16.4",
      pg_dump_version: "17.6",
      database_name: "Acme Prod",
      has_module_table: true,
      base_version: "17.0.1.3",
      installed_modules: { base: "LGPL-3", sale: null, "my\tmod": "OPL-1" },
      internal_users: 2,
      active_partners: 2,
      attachment_files: 2,
      attachment_bytes: 100,
      bytes: Buffer.byteLength(DUMP),
    });
    for (const size of [1, 2, 3, 4, 5, 7, 13, 64]) expect(scan(size)).toEqual(whole);
  });
});

describe("COPY text format", () => {
  it("unescapes fields and reads NULL", () => {
    expect(splitCopyRow("a\\tb\t\\N\tc\\\\d\t\\n\\r\\101\\x41")).toEqual(["a\tb", null, "c\\d", "\n\rAA"]);
    expect(unescapeCopyField("plain")).toBe("plain");
  });

  it("reads the table and column names of a COPY header, quoted or not", () => {
    expect(parseCopyHeader('COPY public.ir_module_module (id, "name", "odd, col") FROM stdin;')).toEqual({
      table: "ir_module_module",
      columns: ["id", "name", "odd, col"],
    });
    expect(parseCopyHeader("COPY res_users (id) FROM stdin;")).toEqual({ table: "res_users", columns: ["id"] });
    expect(parseCopyHeader("COPY x TO stdout;")).toBeNull();
  });
});

describe("SqlDumpScanner's core tables", () => {
  it("notes the ERP's core tables a dump creates or fills, schema-qualified or not, even without rows", () => {
    const s = new SqlDumpScanner();
    s.push(
      Buffer.from(
        [
          "-- PostgreSQL database dump",
          "CREATE TABLE public.res_partner (",
          "    id integer NOT NULL",
          ");",
          "CREATE TABLE res_users (id integer);",
          "CREATE TABLE public.res_users_log (id integer);",
          "COPY public.ir_module_module (id, name) FROM stdin;",
          "\\.",
          "",
        ].join("\n"),
      ),
    );
    expect([...s.facts().core_tables].sort()).toEqual(["ir_module_module", "res_partner", "res_users"]);
  });
});

describe("SqlDumpScanner's hazards", () => {
  it("a pg_dump-made dump (with \\restrict, COPY data holding backslashes) has none", () => {
    expect(scan(7)).toMatchObject({ hazards: [], hazard_count: 0 });
  });

  it("reports what the agent refuses, read as psql reads it: line, kind, text; the first MAX_HAZARDS and the count", () => {
    const s = new SqlDumpScanner();
    const lines = [
      "-- PostgreSQL database dump",
      "COPY public.res_partner (name) FROM stdin;",
      "\\! only data here",
      "\\.",
      "SELECT 1; \\! touch /tmp/x",
      "/* COPY x FROM stdin; */",
      "COPY (SELECT 1) TO PROGRAM 'id';",
      "CREATE FUNCTION f() RETURNS int LANGUAGE plpython3u AS $$ x $$;",
      ...Array.from({ length: 30 }, () => "SELECT lo_export(1, '/tmp/x');"),
    ];
    s.push(Buffer.from(`${lines.join("\n")}\n`));
    const f = s.facts();
    expect(f.hazards.slice(0, 3).map(({ line, kind }) => ({ line, kind }))).toEqual([
      { line: 5, kind: "meta_command" },
      { line: 7, kind: "copy_program" },
      { line: 8, kind: "untrusted_language" },
    ]);
    expect(f.hazards[0]!.text).toMatch(/^\\! touch \/tmp\/x/);
    expect(f.hazards).toHaveLength(20);
    expect(f.hazard_count).toBe(33);
  });
});
