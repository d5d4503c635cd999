// Hostile plain dumps loaded into a real PostgreSQL container (berth-test/postgres:15) through
// loadSqlDump, as a migration's restore does: each payload tries to run a shell command (touch
// a marker file in the database container) or change the server, through a psql meta-command
// (at a line's start, after spaces, after a statement, hidden after a fake COPY in a comment,
// a string or a dollar-quoted body) or through SQL a superuser could run. Each must be refused
// with its code, the marker must not exist and the server must be as it was. A real pg_dump of
// awkward data (backslashes, "\." lookalikes, dollar-quoted bodies, E'' strings, trusted
// extensions, ALTER ... OWNER TO) loads and round-trips, and the loader role is gone after.
// Needs `bash .ci/docker-setup.sh` first.
import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../clock.ts";
import { environmentLabels } from "../../docker/labels.ts";
import { createExecutorHarness, finishSuite, PG_IMAGE, requireTestImages } from "../executor.test-helpers.ts";
import { createDatabase, dropDatabase, restoreDump } from "./database-swap.ts";
import { environmentLayout } from "./environment-layout.ts";
import { ensurePostgres } from "./postgres.ts";
import { loadSqlDump } from "./sql-dump.ts";

const SUITE = "executor-sql-dump-hostile";

/** What pg_dump writes first, and a table with a row of COPY data. */
const HEAD = `--
-- PostgreSQL database dump
--

-- Dumped from database version 15.8
-- Dumped by pg_dump version 15.8

SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;

CREATE TABLE public.t (a text);

COPY public.t (a) FROM stdin;
a row
\\.

`;

/** [name, payload (N: its marker number), code]. */
const HOSTILE: [string, string, string][] = [
  ["\\! at a line's start", "\\! touch /tmp/pwned-N\n", "dump_refused"],
  ["\\! after spaces", "   \\! touch /tmp/pwned-N\n", "dump_refused"],
  ["\\! after a statement on its line", "SELECT 1; \\! touch /tmp/pwned-N\n", "dump_refused"],
  ["\\! after a string holding a quote", "SELECT 'it''s', 'x'; \\! touch /tmp/pwned-N\n", "dump_refused"],
  ["a fake COPY FROM stdin in a /* comment */", "/*\nCOPY public.t (a) FROM stdin;\n*/\n\\! touch /tmp/pwned-N\n", "dump_refused"],
  ["a fake COPY FROM stdin in a '...' string", "SELECT '\nCOPY public.t (a) FROM stdin;\n';\n\\! touch /tmp/pwned-N\n", "dump_refused"],
  ["a fake COPY FROM stdin in a $$ body", "SELECT $$\nCOPY public.t (a) FROM stdin;\n$$;\n\\! touch /tmp/pwned-N\n", "dump_refused"],
  ["\\copy ... program", "\\copy (SELECT 1) TO PROGRAM 'touch /tmp/pwned-N'\n", "dump_refused"],
  ["\\o to a file", "\\o /tmp/pwned-N\nSELECT 1;\n", "dump_refused"],
  ["\\i of a file", "\\i /tmp/evil.sql\n", "dump_refused"],
  ["\\setenv", "\\setenv PAGER 'touch /tmp/pwned-N'\n\\! touch /tmp/pwned-N\n", "dump_refused"],
  ["\\gexec", "SELECT 'COPY (SELECT 1) TO PROGRAM ''touch /tmp/pwned-N''' \\gexec\n", "dump_refused"],
  ["a quote after a number (psql 15 and 16 read it differently)", "SELECT 1e'\\' \\! touch /tmp/pwned-N\n --';\n", "dump_refused"],
  ["a psql variable", "SELECT :'VERSION';\n", "dump_refused"],
  ["text after COPY FROM stdin; on its line", "COPY public.t (a) FROM stdin; SELECT 1;\nx\n\\.\n", "dump_refused"],
  ["COPY ... TO PROGRAM", "COPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned-N';\n", "dump_unsafe"],
  ["COPY ... TO a server file", "COPY (SELECT 1) TO '/tmp/pwned-N';\n", "dump_unsafe"],
  [
    "a C function calling system()",
    "CREATE FUNCTION public.pwn(cstring) RETURNS integer AS 'libc.so.6', 'system' LANGUAGE c STRICT;\nSELECT public.pwn('touch /tmp/pwned-N');\n",
    "dump_unsafe",
  ],
  ["LANGUAGE plpython3u", "CREATE FUNCTION public.pwn() RETURNS void LANGUAGE plpython3u AS $$\nimport os; os.system('touch /tmp/pwned-N')\n$$;\n", "dump_unsafe"],
  ["ALTER SYSTEM", "ALTER SYSTEM SET log_min_messages = 'debug5';\n", "dump_unsafe"],
  ["lo_export", "SELECT lo_export(lo_from_bytea(0, 'x'), '/tmp/pwned-N');\n", "dump_unsafe"],
  ["SET ROLE odoo", "SET ROLE odoo;\nCOPY (SELECT 1) TO PROGRAM 'touch /tmp/pwned-N';\n", "dump_unsafe"],
  ["SET SESSION AUTHORIZATION", "SET SESSION AUTHORIZATION odoo;\n", "dump_unsafe"],
  ["CREATE ROLE", "CREATE ROLE pwned SUPERUSER LOGIN;\n", "dump_unsafe"],
  ["a body calling lo_export", "CREATE FUNCTION public.f() RETURNS void LANGUAGE plpgsql AS $f$ BEGIN PERFORM lo_export(1, '/tmp/pwned-N'); END $f$;\n", "dump_unsafe"],
  ["client_encoding changed", "SET client_encoding = 'SJIS';\n", "dump_unsafe"],
  ["CREATE EXTENSION of one the ERP does not use", "CREATE EXTENSION IF NOT EXISTS dblink WITH SCHEMA public;\n", "dump_unsafe"],
];

describe("hostile plain dumps", () => {
  const h = createExecutorHarness(SUITE);
  const layout = environmentLayout(h.stateDir, randomUUID());
  let db = "";
  let n = 0;
  const sh = async (cmd: string[]) => h.docker.exec(db, cmd, { deadlineMs: 30_000 });
  const su = async (sql: string, database = "postgres") => {
    const r = await sh(["psql", "-U", "odoo", "-d", database, "-X", "-q", "-A", "-t", "-c", sql]);
    if (r.exitCode !== 0) throw new Error(r.stderr);
    return r.stdout.trim();
  };
  const newDatabase = async () => {
    const name = `odoo_restore_${Date.now().toString(36)}${String(++n).padStart(3, "0")}`;
    await createDatabase(h.docker, db, name);
    return name;
  };
  /**
   * What an attack could change, apart from marker files. The hostile loads run at once, so
   * another load's own loader role (berth_loader_*) may exist for a moment: left out here, and
   * checked gone once they are all done.
   */
  const serverState = async () => ({
    roles: await su("SELECT string_agg(rolname, ',' ORDER BY rolname) FROM pg_roles WHERE rolname !~ '^(pg_|berth_loader_)'"),
    autoConf: (await sh(["cat", "/var/lib/postgresql/data/postgresql.auto.conf"])).stdout,
    extensions: await su("SELECT string_agg(extname, ',' ORDER BY extname) FROM pg_extension"),
  });

  beforeAll(async () => {
    await requireTestImages(h.docker);
    await h.docker.createNetwork(layout.network, environmentLabels(layout.environmentId, "network", h.labels));
    const ready = await ensurePostgres(h.docker, layout, { log: () => undefined, signal: new AbortController().signal }, {
      image: PG_IMAGE,
      extraLabels: h.labels,
      readyTimeoutMs: 120_000,
      clock: systemClock,
    });
    db = ready.containerId;
    // For \i: a script that would run a shell command.
    await sh(["sh", "-c", "printf '\\\\! touch /tmp/pwned-i\\n' > /tmp/evil.sql"]);
  }, 240_000);

  afterAll(() => finishSuite(SUITE, h), 120_000);

  // At once (they wait on the engine more than they compute): each with its own database and marker.
  HOSTILE.forEach(([name, payload, code], i) => {
    it.concurrent(`refuses ${name} (${code}), and nothing runs`, async () => {
      const marker = `/tmp/pwned-${i + 1}`;
      const before = await serverState();
      const database = await newDatabase();
      const dump = HEAD + payload.replaceAll("pwned-N", marker.slice(5));
      await expect(loadSqlDump(h.docker, db, database, Readable.from([Buffer.from(dump)]), 60_000)).rejects.toMatchObject({ code });
      expect((await sh(["ls", marker, "/tmp/pwned-i"])).stdout).toBe("");
      expect(await serverState()).toEqual(before);
      await dropDatabase(h.docker, db, database);
    }, 120_000);
  });

  it("leaves no loader role behind once the hostile loads are done", async () => {
    expect(await su("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'")).toBe("0");
  });

  it("a NUL byte (psql drops the rest of its line) is refused", async () => {
    const database = await newDatabase();
    const dump = Buffer.concat([Buffer.from(`${HEAD}SELECT 1;`), Buffer.from([0]), Buffer.from("'\n\\! touch /tmp/pwned-nul\n'x';\n")]);
    await expect(loadSqlDump(h.docker, db, database, Readable.from([dump]), 60_000)).rejects.toMatchObject({ code: "dump_refused" });
    expect((await sh(["ls", "/tmp/pwned-nul"])).exitCode).not.toBe(0);
    await dropDatabase(h.docker, db, database);
  }, 60_000);

  it("a real pg_dump of awkward data loads and round-trips, chunked anywhere, as a loader role dropped after", async () => {
    const source = `odoo_restore_src${Date.now().toString(36)}`;
    await createDatabase(h.docker, db, source);
    await su(
      String.raw`CREATE EXTENSION pg_trgm; CREATE EXTENSION unaccent;
      CREATE TABLE notes (id serial PRIMARY KEY, body text, data bytea);
      INSERT INTO notes (body, data) VALUES (E'back\\slash', '\x00ff'), (E'\\.', NULL), (E'line\none\ttab', '\x5c2e'), (E'\\! not a command', NULL), ('it''s $$ dollar', NULL);
      CREATE INDEX notes_trgm ON notes USING gin (body gin_trgm_ops);
      CREATE FUNCTION shout(t text) RETURNS text LANGUAGE plpgsql AS $body$ BEGIN RETURN upper(t) || E'\\! $$'; END $body$;
      CREATE VIEW odd AS SELECT id, E'it\'s \\ here' AS e, unaccent('Crème') AS u FROM notes;`,
      source,
    );
    // Without --no-owner: the dump carries ALTER ... OWNER TO odoo, which the loader may not run (dropped).
    const out: Buffer[] = [];
    const { Writable } = await import("node:stream");
    const sink = new Writable({
      write(chunk: Buffer, _e, done) {
        out.push(chunk);
        done();
      },
    });
    const r = await h.docker.exec(db, ["pg_dump", "-U", "odoo", "-d", source], { deadlineMs: 60_000, stdout: sink });
    expect(r.exitCode, r.stderr).toBe(0);
    const dump = Buffer.concat(out);
    expect(dump.toString()).toContain("OWNER TO odoo;");
    const digest = "SELECT md5(string_agg(id || body || coalesce(encode(data, 'hex'), '-') || shout(body), '|' ORDER BY id)) || (SELECT string_agg(e || u, '') FROM odd) FROM notes";
    for (const size of [1, 7, 4096]) {
      const database = await newDatabase();
      const chunks: Buffer[] = [];
      for (let i = 0; i < dump.length; i += size) chunks.push(dump.subarray(i, i + size));
      await loadSqlDump(h.docker, db, database, Readable.from(chunks), 120_000);
      expect(await su(digest, database)).toBe(await su(digest, source));
      expect(await su("SELECT string_agg(DISTINCT pg_get_userbyid(relowner), ',') FROM pg_class WHERE relnamespace = 'public'::regnamespace", database)).toBe("odoo");
      expect(await su(`SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = '${database}'`)).toBe("odoo");
      expect(await su("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'")).toBe("0");
      await dropDatabase(h.docker, db, database);
    }
    await dropDatabase(h.docker, db, source);
  }, 240_000);

  it("a custom-format dump's SQL runs as the loader, no superuser: COPY TO PROGRAM in it fails, and the loader is dropped", async () => {
    const source = `odoo_restore_cus${Date.now().toString(36)}`;
    await createDatabase(h.docker, db, source);
    // A view whose rule runs COPY ... TO PROGRAM cannot exist; a materialized view refreshed at restore can call a function that does.
    // The program reads what COPY writes (touch did not: COPY then failed now and then with a broken pipe while the test set it up).
    await su(
      `CREATE FUNCTION pwn() RETURNS int LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'COPY (SELECT 1) TO PROGRAM ''cat > /tmp/pwned-custom'''; RETURN 1; END $$;
       CREATE MATERIALIZED VIEW m AS SELECT 1 AS x WHERE false;`,
      source,
    );
    await su("CREATE OR REPLACE FUNCTION public.f() RETURNS int LANGUAGE sql AS 'SELECT 1'", source);
    await su("DROP MATERIALIZED VIEW m; CREATE MATERIALIZED VIEW m AS SELECT pwn() AS x", source);
    await sh(["rm", "-f", "/tmp/pwned-custom"]);
    const out: Buffer[] = [];
    const r = await h.docker.exec(db, ["sh", "-c", `pg_dump -U odoo --format=custom -d ${source} | base64 -w0`], { deadlineMs: 60_000 });
    expect(r.exitCode, r.stderr).toBe(0);
    out.push(Buffer.from(r.stdout, "base64"));
    const database = await newDatabase();
    await expect(restoreDump(h.docker, db, database, Readable.from(out), 60_000)).rejects.toMatchObject({
      code: "restore_failed",
      message: expect.stringMatching(/must be superuser|permission denied/),
    });
    expect((await sh(["ls", "/tmp/pwned-custom"])).exitCode).not.toBe(0);
    expect(await su("SELECT count(*) FROM pg_roles WHERE rolname LIKE 'berth_loader_%'")).toBe("0");
    await dropDatabase(h.docker, db, database);
    await dropDatabase(h.docker, db, source);
  }, 120_000);
});
