// Loading a plain SQL dump (pg_dump's default format, the dump.sql of the ERP's backups) into
// a restore database with psql, as the ERP's own restore does, but stopping at the first error
// (ON_ERROR_STOP: psql otherwise exits 0 whatever failed) and in one transaction.
//
// A plain dump is a psql script: psql runs meta-commands (\! runs a shell command) and the
// server runs whatever SQL it holds. Three guards, each enough for what it covers:
// - the dump is read as psql reads it (@berth/protocol psql-script.ts) and refused at the first
//   meta-command pg_dump does not write or statement reaching the server's programs, files or
//   roles, before psql gets that statement's end (what psql has of it is made to fail);
// - psql runs in restricted mode (`\restrict <random key>` first, psql 17.6, 16.10, 15.14,
//   14.19, 13.22 and later): it refuses every meta-command itself, so text Berth and psql
//   would read differently still runs none; the dump's own \restrict lines are blanked;
// - psql runs as nobody (not root) in a container with no network (loader-container.ts) and
//   connects as the restore's own loader role, which owns the new database and nothing else
//   and is no superuser (restore-role.ts).
//
// A dump made by a newer pg_dump than the server's major is refused from its header
// ("-- Dumped by pg_dump version 17.2"): pg_dump writes what its own release knows (17:
// `SET transaction_timeout = 0;`), which an older server rejects (ERP-FACTS "Dump versions").
import { randomBytes } from "node:crypto";
import { Transform, type Readable } from "node:stream";
import { CLIENT_SIDE_KINDS, PsqlScript, type PsqlFinding } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { CommandError } from "../runner/handler-types.ts";
import { serverMajor } from "./psql.ts";
import { runLoader } from "./loader-container.ts";
import { LOADER_OS_USER, withLoaderRole } from "./restore-role.ts";

const DUMPED_BY = /^-- Dumped by pg_dump version (\d+)/m;
/** pg_dump writes its header in the first lines; this much is read before anything goes on. */
const HEADER_BYTES = 16 * 1024;
/**
 * Sent to psql after the bytes before a refused construct: whatever state psql's lexer is in,
 * its buffer then holds bytes that are not UTF-8, which the server refuses (or an unclosed
 * quote or comment), so the statement psql has fails and ON_ERROR_STOP ends the transaction.
 */
const POISON = Buffer.from("\n\xff\n", "latin1");

export interface GuardOptions {
  /** The server's major: a dump from a newer pg_dump is refused. */
  serverMajor?: number;
  /** psql's major (BEGIN ATOMIC bodies from 14). */
  psqlMajor?: number;
  /** Sent first (psql's `\restrict KEY`). */
  prologue?: string;
}

/**
 * The CommandError of a finding: dump_refused for psql's own (meta-commands), dump_unsafe for
 * the server's; `at` says where it is ("line 12 of the dump" by default).
 */
export function refusal(f: PsqlFinding, at = `line ${f.line} of the dump`): CommandError {
  if (CLIENT_SIDE_KINDS.has(f.kind)) {
    return new CommandError("dump_refused", `${at}: ${f.text}: refused, psql would run it`);
  }
  return new CommandError("dump_unsafe", `${at} (${f.kind}): ${f.text}: refused, pg_dump does not write this for an ERP database`);
}

/**
 * Passes a plain dump through to psql, ending it (with POISON) at the first finding, which
 * `refused()` then returns; a dump newer than `serverMajor` is refused from its header.
 */
export function guardSqlDump(options: GuardOptions = {}): Transform & { refused(): CommandError | null } {
  const script = new PsqlScript({ stopAtFirst: true, beginAtomic: (options.psqlMajor ?? 14) >= 14 });
  let refused: CommandError | null = null;
  let header: Buffer[] | null = [];
  let headerBytes = 0;
  /** Bytes scanned but not passed on yet, from absolute offset `heldFrom`. */
  let held: Buffer[] = [];
  let heldFrom = 0;
  let scanned = 0;

  const release = (upTo: number): Buffer => {
    // Views, not copies, unless something is blanked (a copy then: the chunks are the reader's).
    const all = held.length === 1 ? held[0]! : Buffer.concat(held);
    const blanks = [...script.allowedMeta.splice(0), ...script.ownerChanges.splice(0)];
    const view = all.subarray(0, upTo - heldFrom);
    const out = blanks.length > 0 ? Buffer.from(view) : view;
    // pg_dump's own \restrict / \unrestrict (psql is restricted with Berth's key already) and
    // ALTER ... OWNER TO (the loader may not give objects away; all is the ERP user's after):
    // blanked, newlines kept so psql's line numbers stay the dump's.
    for (const m of blanks) {
      for (let i = m.start - heldFrom; i < m.end - heldFrom; i++) if (out[i] !== 0x0a) out[i] = 0x20;
    }
    held = upTo - heldFrom < all.length ? [all.subarray(upTo - heldFrom)] : [];
    heldFrom = upTo;
    return out;
  };

  const take = (stream: Transform, chunk: Buffer) => {
    script.push(chunk);
    held.push(chunk);
    scanned += chunk.length;
    const first = script.first;
    if (first !== undefined) {
      refused = refusal(first);
      stream.push(release(first.offset));
      stream.push(POISON);
      stream.push(null);
      return;
    }
    const out = release(script.pendingFrom ?? scanned);
    if (out.length > 0) stream.push(out);
  };

  const checkHeader = (text: string) => {
    const dumpedBy = DUMPED_BY.exec(text);
    if (dumpedBy !== null && options.serverMajor !== undefined && Number(dumpedBy[1]) > options.serverMajor) {
      throw new CommandError(
        "dump_too_new",
        `the dump was made by pg_dump ${dumpedBy[1]}, newer than this environment's PostgreSQL ${options.serverMajor}, which cannot load what it writes: restore it on PostgreSQL ${dumpedBy[1]} or later, or dump it again with pg_dump ${options.serverMajor}`,
      );
    }
  };

  const flushHeader = (stream: Transform) => {
    const first = Buffer.concat(header ?? []);
    header = null;
    checkHeader(first.toString("latin1"));
    if (options.prologue !== undefined) stream.push(Buffer.from(options.prologue, "utf8"));
    take(stream, first);
  };

  const guard = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      try {
        if (refused !== null) return done();
        if (header !== null) {
          header.push(chunk);
          headerBytes += chunk.length;
          if (headerBytes >= HEADER_BYTES) flushHeader(this);
        } else take(this, chunk);
        done();
      } catch (error) {
        done(error as Error);
      }
    },
    flush(done) {
      try {
        if (refused === null && header !== null) flushHeader(this);
        if (refused === null) {
          script.end();
          const first = script.first;
          if (first !== undefined) {
            refused = refusal(first);
            this.push(release(first.offset));
            this.push(POISON);
          } else this.push(release(scanned));
        }
        done();
      } catch (error) {
        done(error as Error);
      }
    },
  });
  return Object.assign(guard, { refused: () => refused });
}

/** psql's version in the database container: its major, and whether it has \restrict (restricted mode). */
export async function psqlVersion(docker: DockerClient, dbContainerId: string): Promise<{ major: number; restrict: boolean } | null> {
  const r = await docker.exec(dbContainerId, ["psql", "--version"], { deadlineMs: 30_000, user: LOADER_OS_USER }).catch(() => null);
  const m = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(r?.stdout ?? "");
  if (m === null) return null;
  const major = Number(m[1]);
  const minor = Number(m[2] ?? 0);
  // The releases of August 2025 that brought \restrict (CVE-2025-8714).
  const since: Record<number, number> = { 13: 22, 14: 19, 15: 14, 16: 10, 17: 6 };
  return { major, restrict: major >= 18 || (since[major] !== undefined && minor >= since[major]) };
}

/** Loads `dump` (plain SQL) into the restore database `name` in one transaction, as its loader role; the first error fails it. */
export async function loadSqlDump(docker: DockerClient, dbContainerId: string, name: string, dump: Readable, deadlineMs: number): Promise<void> {
  const [major, client] = await Promise.all([serverMajor(docker, dbContainerId), psqlVersion(docker, dbContainerId)]);
  const key = randomBytes(16).toString("hex");
  const guarded = guardSqlDump({
    serverMajor: major,
    psqlMajor: client?.major,
    prologue: client?.restrict ? `\\restrict ${key}\n` : undefined,
  });
  let failed: unknown = null;
  guarded.on("error", (error) => {
    failed = error;
  });
  dump.on("error", (error) => guarded.destroy(error));
  dump.pipe(guarded);
  // A refused or unreadable dump ends psql's input early: what it loaded stays in `name`, a
  // database only ever loaded to be verified and swapped in, which the caller then drops.
  await withLoaderRole(docker, dbContainerId, name, async (role) => {
    const result = await runLoader(docker, dbContainerId, ["psql", "-U", role, "-d", name, "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction", "-f", "-"], {
      deadlineMs,
      stdin: guarded,
    }).catch((error: unknown) => {
      throw guarded.refused() ?? failed ?? error;
    });
    const refused = guarded.refused() ?? failed;
    if (refused !== null) throw refused;
    if (result.exitCode !== 0) {
      const why = result.stderr.trim().split("\n").slice(-5).join("\n");
      throw new CommandError("restore_failed", `psql could not load the dump (exit code ${result.exitCode}): ${why}`);
    }
  }, major);
}
