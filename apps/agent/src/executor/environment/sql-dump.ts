// Loading a plain SQL dump (pg_dump's default format, the dump.sql of the ERP's backups) into
// a database with psql, as the ERP's own restore does, but stopping at the first error
// (ON_ERROR_STOP: psql otherwise exits 0 whatever failed) and in one transaction.
//
// A plain dump is a psql script, and psql runs meta-commands (\! runs a shell command). The
// only ones pg_dump writes are \restrict / \unrestrict (recent releases) and \connect (with
// --create); anything else outside COPY data is refused before psql sees it. COPY data lines
// (between "COPY ... FROM stdin;" and "\.") pass untouched.
//
// A dump made by a newer pg_dump than the server's major is refused from its header
// ("-- Dumped by pg_dump version 17.2"): pg_dump writes what its own release knows (17:
// `SET transaction_timeout = 0;`), which an older server rejects (ERP-FACTS "Dump versions").
import { Transform, type Readable } from "node:stream";
import type { DockerClient } from "../../docker/docker-client.ts";
import { CommandError } from "../runner/handler-types.ts";
import { psql } from "./database-swap.ts";
import { ERP_DB_USER } from "./environment-layout.ts";

const ALLOWED_META = /^\\(?:restrict|unrestrict) [A-Za-z0-9]+\r?$/;
const COPY_FROM_STDIN = /^COPY .+ FROM stdin;\r?$/;
const DUMPED_BY = /^-- Dumped by pg_dump version (\d+)/;
/** pg_dump writes its header in the first lines. */
const HEADER_LINES = 40;

/** Passes a plain dump through, refusing psql meta-commands pg_dump does not write and a dump newer than `serverMajor`. */
export function guardSqlDump(serverMajor?: number): Transform {
  let inCopy = false;
  let rest = "";
  let lineNo = 0;
  const check = (line: string) => {
    lineNo++;
    const dumpedBy = lineNo <= HEADER_LINES ? DUMPED_BY.exec(line) : null;
    if (dumpedBy !== null && serverMajor !== undefined && Number(dumpedBy[1]) > serverMajor) {
      throw new CommandError(
        "dump_too_new",
        `the dump was made by pg_dump ${dumpedBy[1]}, newer than this environment's PostgreSQL ${serverMajor}, which cannot load what it writes: restore it on PostgreSQL ${dumpedBy[1]} or later, or dump it again with pg_dump ${serverMajor}`,
      );
    }
    if (inCopy) {
      if (line === "\\." || line === "\\.\r") inCopy = false;
      return;
    }
    if (COPY_FROM_STDIN.test(line)) inCopy = true;
    else if (line.startsWith("\\") && !ALLOWED_META.test(line)) {
      throw new CommandError("dump_refused", `line ${lineNo} of the dump is a psql meta-command pg_dump does not write (${line.slice(0, 40)}): refused`);
    }
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        const text = rest + chunk.toString("utf8");
        const lines = text.split("\n");
        rest = lines.pop() ?? "";
        for (const line of lines) check(line);
        // Only whole lines go on, so a refused line never reaches psql even in part.
        const complete = text.length - rest.length;
        done(null, Buffer.from(text.slice(0, complete), "utf8"));
      } catch (error) {
        done(error as Error);
      }
    },
    flush(done) {
      try {
        if (rest !== "") check(rest);
        done(null, rest === "" ? undefined : Buffer.from(rest, "utf8"));
      } catch (error) {
        done(error as Error);
      }
    },
  });
}

/** Loads `dump` (plain SQL) into the existing database `name` in one transaction; the first error fails it. */
export async function loadSqlDump(docker: DockerClient, dbContainerId: string, name: string, dump: Readable, deadlineMs: number): Promise<void> {
  const [version = ""] = await psql(docker, dbContainerId, "SHOW server_version_num", { database: name, deadlineMs: 30_000 }).catch(() => []);
  const serverMajor = Math.floor(Number(version) / 10_000);
  const guarded = guardSqlDump(Number.isFinite(serverMajor) && serverMajor > 0 ? serverMajor : undefined);
  let refused: unknown = null;
  guarded.on("error", (error) => {
    refused = error;
  });
  dump.on("error", (error) => guarded.destroy(error));
  dump.pipe(guarded);
  // A refused or unreadable dump ends psql's input early: what it loaded stays in `name`, a
  // database only ever loaded to be verified and swapped in, which the caller then drops.
  const result = await docker
    .exec(dbContainerId, ["psql", "-U", ERP_DB_USER, "-d", name, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", "-"], {
      deadlineMs,
      stdin: guarded,
    })
    .catch((error: unknown) => {
      throw refused ?? error;
    });
  if (refused !== null) throw refused;
  if (result.exitCode !== 0) {
    const why = result.stderr.trim().split("\n").slice(-5).join("\n");
    throw new CommandError("restore_failed", `psql could not load the dump (exit code ${result.exitCode}): ${why}`);
  }
}
