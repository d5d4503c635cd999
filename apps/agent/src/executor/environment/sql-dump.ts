// Loading a plain SQL dump (pg_dump's default format, the dump.sql of the ERP's backups) into
// a database with psql, as the ERP's own restore does, but stopping at the first error
// (ON_ERROR_STOP: psql otherwise exits 0 whatever failed) and in one transaction.
//
// A plain dump is a psql script, and psql runs meta-commands (\! runs a shell command). The
// only ones pg_dump writes are \restrict / \unrestrict (recent releases) and \connect (with
// --create); anything else outside COPY data is refused before psql sees it. COPY data lines
// (between "COPY ... FROM stdin;" and "\.") pass untouched.
import { Transform, type Readable } from "node:stream";
import type { DockerClient } from "../../docker/docker-client.ts";
import { CommandError } from "../runner/handler-types.ts";
import { ERP_DB_USER } from "./environment-layout.ts";

const ALLOWED_META = /^\\(?:restrict|unrestrict) [A-Za-z0-9]+\r?$/;
const COPY_FROM_STDIN = /^COPY .+ FROM stdin;\r?$/;

/** Passes a plain dump through, refusing psql meta-commands pg_dump does not write. */
export function guardSqlDump(): Transform {
  let inCopy = false;
  let rest = "";
  let lineNo = 0;
  const check = (line: string) => {
    lineNo++;
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
  const guarded = guardSqlDump();
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
