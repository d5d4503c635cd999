// The psql script reader finds exactly what its first version found (the frozen copy in
// test/bench/psql-script/baseline/, kept for bench:psql-script): the same findings (kind,
// line, offset, text), the same \restrict lines and ALTER ... OWNER TO ranges, COPY rows and
// pendingFrom after every chunk, on random dumps mixing every construct the lexer knows, cut
// into chunks at random places.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PsqlScript as Baseline } from "../../../test/bench/psql-script/baseline/psql-script.ts";
import { PsqlScript, type PsqlScriptOptions } from "./psql-script.ts";

type Reader = { push(c: Uint8Array): void; end(): void; pendingFrom: number | null } & Pick<PsqlScript, "findings" | "findingCount" | "allowedMeta" | "ownerChanges" | "copyRows">;

/** What a reader reports for `bytes` pushed in the pieces `cuts` makes, pendingFrom read after each. */
function run(make: (o: PsqlScriptOptions) => Reader, bytes: Uint8Array, cuts: number[], options: PsqlScriptOptions) {
  const s = make(options);
  const pending: (number | null)[] = [];
  let at = 0;
  for (const cut of [...new Set(cuts.filter((c) => c > 0 && c < bytes.length))].sort((a, b) => a - b).concat(bytes.length)) {
    s.push(bytes.subarray(at, cut));
    pending.push(s.pendingFrom);
    at = cut;
  }
  s.end();
  return { findings: s.findings, count: s.findingCount, allowed: s.allowedMeta, owners: s.ownerChanges, rows: s.copyRows, pending };
}

const WORDS = [
  "SELECT", "insert", "INTO", "VALUES", "create", "OR", "replace", "FUNCTION", "procedure", "LANGUAGE", "plpgsql", "sql", "c", "BEGIN", "ATOMIC",
  "END", "case", "copy", "FROM", "TO", "stdin", "STDOUT", "PROGRAM", "ALTER", "TABLE", "owner", "SYSTEM", "ROLE", "user", "SET", "SESSION",
  "AUTHORIZATION", "local", "names", "GRANT", "ON", "DO", "LOAD", "EXTENSION", "IF", "NOT", "EXISTS", "pg_trgm", "adminpack", "drop", "trusted",
  "pg_read_file", "lo_export", "dblink", "set_config", "client_encoding", "standard_conforming_strings", "pg_catalog", "e", "E", "b", "x", "N", "u", "U",
  "t", "odoo", "a$b", "été", "x_1",
];
const PIECES = [
  " ", " ", " ", "\n", "\n", "\r\n", "\t", "\v", "\f", "\r", ";", ";\n", ",", "(", ")", ".", "::", ":=", ":", "-", "/", "*", "&", "$", "=", "[", "]",
  "'", "''", "\"", "\"\"", "\\", "\\\\", "$$", "$a$", "$ab$", "$1", "--", "-- c\n", "/*", "*/", "/* x /* y */ z */", "\\! id\n", "\\restrict k1\n",
  "\\unrestrict k1\n", "\\connect db\n", ":foo", ":'DBNAME'", ":\"X\"", ":'x", "\\.\n", "\\.\r\n", "a\tb\n", "\\\\.\n", "E'", "U&'", "U&\"", "u&x",
  "1", "42", "1.5", "1e5", "0x", "1_000", "1e'", "\u00e9", "\u00ff", "\u0000",
  "COPY t FROM stdin;\n", "COPY t (a) FROM STDIN;\nx\ty\n\\.\n", "ALTER TABLE t OWNER TO odoo;\n", "SET client_encoding = 'UTF8';\n",
  "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END;\n", "DO $$ BEGIN PERFORM pg_read_file('x'); END $$;\n",
  "INSERT INTO t VALUES (1, 'a''b', E'c\\'d', 'pg_read_file');\n", "'a'\n'b'", "'a' -- c\n'b'",
];
/** Short pieces where quotes, words and text meet: a dump of a few ends with a word the rules refuse, whose finding quotes it. */
const DENSE = [
  "'", "''", "'a'", "'a'\f\n'b'", "'a'\v\n'b'", "'a' \v'b'", "'a'\n\v'b'", "'a'--c\n'b'", "'a'-", "E'", "E'\\", "\\'", "'pg_read''_file'",
  "'set_''config'", "E'pg_\\read_file'", "$e'", "$E'x'", "$u&", "$u&'x'", "$u&\"x\"", "U&'y'", "u&z", "$$", "$a$", "$a", "$1", "\"", "\"\"", "\"d\"",
  " ", "\n", "\r", "\t", "/*", "*/", "-", "--", "/", "*", ":", "::", ":'", ":\"", "X", "e", "1", "1e", "x", "dblink", "ab_cd_ef", ";", "(", ")",
];
const denseArb = fc.array(fc.constantFrom(...DENSE), { maxLength: 16 }).map((parts) => Buffer.from(`SELECT ${parts.join("")} lo_export;\n`, "latin1"));

const dumpArb = fc
  .array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...PIECES) }, { weight: 2, arbitrary: fc.constantFrom(...WORDS) }), { maxLength: 120 })
  .map((parts) => Buffer.from(parts.join(""), "latin1"));
const caseArb = dumpArb.chain((dump) =>
  fc.record({
    dump: fc.constant(dump),
    cuts: fc.array(fc.integer({ min: 1, max: Math.max(1, dump.length - 1) }), { maxLength: 12 }),
    stopAtFirst: fc.boolean(),
    beginAtomic: fc.boolean(),
  }),
);

describe("PsqlScript against its first version (frozen baseline)", () => {
  it("finds the same on random dumps cut at random places (property)", () => {
    fc.assert(
      fc.property(caseArb, ({ dump, cuts, stopAtFirst, beginAtomic }) => {
        const options = { stopAtFirst, beginAtomic, maxFindings: 1000 };
        const expected = run((o) => new Baseline(o), dump, cuts, options);
        expect(run((o) => new PsqlScript(o), dump, cuts, options)).toEqual(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it("quotes the same statement text in findings (property)", () => {
    fc.assert(
      fc.property(
        denseArb.chain((dump) => fc.record({ dump: fc.constant(dump), cuts: fc.array(fc.integer({ min: 1, max: Math.max(1, dump.length - 1) }), { maxLength: 6 }) })),
        ({ dump, cuts }) => {
          const options = { maxFindings: 1000 };
          expect(run((o) => new PsqlScript(o), dump, cuts, options)).toEqual(run((o) => new Baseline(o), dump, cuts, options));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it("finds the same on long statements (text kept up to its limit, ALTER held back up to its limit)", () => {
    const long = (n: number) => "x ".repeat(n);
    const dumps = [
      `ALTER TABLE t ${long(3000)} OWNER TO odoo;\nSELECT pg_read_file('a');\n`,
      `SET client_encoding = ${long(120)}'UTF8';\nSELECT '${long(200)}' || lo_export(1, 'x');\n`,
      `CREATE FUNCTION f() RETURNS int AS $$ ${long(300)} dblink $$ LANGUAGE plpgsql;\n`,
      `INSERT INTO t VALUES ('${long(50_000)}', E'${long(100)}\\'', $q$ ${long(100)} $q$);\n\\! x\n`,
    ];
    for (const text of dumps) {
      const dump = Buffer.from(text);
      for (const size of [1, 7, 100, 4096]) {
        const cuts = Array.from({ length: Math.floor(dump.length / size) }, (_, k) => (k + 1) * size);
        for (const stopAtFirst of [false, true]) {
          const options = { stopAtFirst, maxFindings: 1000 };
          expect(run((o) => new PsqlScript(o), dump, cuts, options), `${text.slice(0, 40)} in ${size}-byte chunks`).toEqual(run((o) => new Baseline(o), dump, cuts, options));
        }
      }
    }
  });
});
