// Loading a custom-format dump (pg_dump -Fc: a bare .dump, or dump.dump in a backup) into a
// restore database with pg_restore, read first by the rule the control plane's analysis
// reported it by (@berth/protocol scanArchiveToc): pg_restore reads the whole TOC before it
// runs anything, and the TOC holds every statement it runs (the data after it is COPY rows),
// so the TOC is read and held here, and pg_restore is started only when no entry has a hazard;
// it then gets the held bytes and the rest of the stream. A dump with one is refused with the
// plain path's codes (sql-dump.ts refusal) before any container runs, so nothing is created.
// pg_restore runs as plain dumps' psql does: as the restore's loader role, in the no-network
// one-off container (database-swap.ts restoreDump), --no-owner --single-transaction
// --exit-on-error.
import { Readable } from "node:stream";
import { ArchiveBytes, PgArchiveError, PgCustomArchive, scanArchiveToc } from "@berth/protocol";
import type { DockerClient } from "../../docker/docker-client.ts";
import { CommandError } from "../runner/handler-types.ts";
import { restoreDump } from "./database-swap.ts";
import { serverMajor } from "./psql.ts";
import { refusal } from "./sql-dump.ts";

/** What a custom-format dump starts with. */
export const CUSTOM_DUMP_MAGIC = "PGDMP";
/**
 * The most TOC bytes held before pg_restore starts: a large ERP database's TOC (tens of
 * thousands of entries of a few hundred bytes) is tens of MB; past this it is refused.
 */
export const MAX_HELD_TOC_BYTES = 256 << 20;
/** pg_dump's version in the archive's header: "17.2 (Debian 17.2-1)". */
const MAJOR = /^(\d+)/;

/**
 * Reads the TOC of the custom-format dump streaming in `input`: throws the CommandError of its
 * first hazard (dump_refused / dump_unsafe), of a dump newer than `serverMajor` (dump_too_new)
 * or of an archive that cannot be read (archive_unreadable); else the whole dump, as it came.
 */
export async function guardCustomDump(input: HeldInput, major: number | undefined): Promise<Readable> {
  let toc;
  try {
    toc = await scanArchiveToc(new PgCustomArchive(new ArchiveBytes(input.chunks())), { maxKept: 1 });
  } catch (error) {
    await input.discard();
    if (error instanceof PgArchiveError) throw new CommandError("archive_unreadable", `the custom-format dump cannot be read: ${error.message}`);
    throw error;
  }
  const first = toc.hazards[0];
  const dumpedBy = Number(MAJOR.exec(toc.header.pgDumpVersion ?? "")?.[1] ?? 0);
  if (first !== undefined || (major !== undefined && dumpedBy > major)) {
    await input.discard();
    if (first !== undefined) throw refusal(first, `line ${first.line} of an entry of the custom-format dump`);
    throw new CommandError(
      "dump_too_new",
      `the dump was made by pg_dump ${dumpedBy}, newer than this environment's PostgreSQL ${major}, whose pg_restore cannot read it: restore it on PostgreSQL ${dumpedBy} or later, or dump it again with pg_dump ${major}`,
    );
  }
  return input.release();
}

/** Loads the custom-format dump in `input` into the restore database `name` in one transaction, as its loader role; see the header. */
export async function loadCustomDump(docker: DockerClient, dbContainerId: string, name: string, input: HeldInput, deadlineMs: number): Promise<void> {
  const guarded = await guardCustomDump(input, await serverMajor(docker, dbContainerId));
  await restoreDump(docker, dbContainerId, name, guarded, deadlineMs);
}

/**
 * A stream read ahead: the chunks pulled so far are held (at most `maxHeld` bytes), so what
 * was read to decide can still be passed on, whole, once decided.
 */
export class HeldInput {
  private readonly held: Buffer[] = [];
  private heldBytes = 0;
  private readonly source: AsyncIterator<Uint8Array>;

  constructor(
    stream: AsyncIterable<Uint8Array>,
    private readonly maxHeld: number,
  ) {
    this.source = stream[Symbol.asyncIterator]();
  }

  /** The first `n` bytes (fewer if the stream is shorter). */
  async head(n: number): Promise<Buffer> {
    while (this.heldBytes < n && (await this.pull()) !== null);
    return Buffer.concat(this.held).subarray(0, n);
  }

  /** The stream from its start, holding what is pulled from here on. */
  async *chunks(): AsyncGenerator<Buffer> {
    for (let i = 0; ; i++) {
      const chunk = i < this.held.length ? this.held[i]! : await this.pull();
      if (chunk === null) return;
      yield chunk;
    }
  }

  /** The whole stream, from its start, holding nothing more. */
  release(): Readable {
    const { held, source } = this;
    return Readable.from(
      (async function* () {
        yield* held.splice(0);
        for (let next = await source.next(); !next.done; next = await source.next()) yield Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
      })(),
      { objectMode: false },
    );
  }

  /** Ends the stream unread (closes what is behind it). */
  async discard(): Promise<void> {
    this.held.length = 0;
    await this.source.return?.();
  }

  private async pull(): Promise<Buffer | null> {
    const next = await this.source.next();
    if (next.done) return null;
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    this.heldBytes += chunk.length;
    if (this.heldBytes > this.maxHeld) {
      throw new CommandError("archive_unreadable", `the dump's first ${this.maxHeld} bytes hold no complete table of contents: it is not a dump Berth can check before loading`);
    }
    this.held.push(chunk);
    return chunk;
  }
}
