// Reads a custom-format dump (pg_dump -Fc) for the analysis, as it streams past: the header's
// versions and database name, the TOC (@berth/protocol PgCustomArchive), then the data blocks.
// What pg_restore would run of each TOC entry is read by the same hazard rules as a plain dump,
// through @berth/protocol's scanArchiveToc: the rule the agent refuses a dump by. Which
// core tables exist comes from the TABLE entries; the rows of the tables the analysis reads
// are inflated and fed to the plain dump's scanner (SqlDumpScanner) after their COPY
// statement, so both formats give the same facts. Every data block is inflated and counted
// (the size of the database as restored), never kept.
import { once } from "node:events";
import type { Transform } from "node:stream";
import { finished } from "node:stream/promises";
import { createInflate, createZstdDecompress } from "node:zlib";
import { ArchiveBytes, PgArchiveError, PgCustomArchive, scanArchiveToc, type PgCompression, type PgDataSink } from "@berth/protocol";
import { BackupAnalysisError } from "./analysis-types.ts";
import type { InflateLimits } from "./analysis-limits.ts";
import { parseCopyHeader } from "./copy-text.ts";
import { MAX_HAZARDS, READ_TABLES, SqlDumpScanner, type DumpFacts } from "./sql-dump-scanner.ts";

/** Inflated data may pass the stored bytes times maxRatio by this much (a dump's first table may be all alike rows). */
const RATIO_SLACK = 64 << 20;
const END_OF_COPY = Buffer.from("\\.\n");
const NEWLINE = Buffer.from("\n");

/** The facts of the custom-format dump streaming as `chunks`; rejects with BackupAnalysisError when it cannot be read. */
export async function scanCustomDump(chunks: AsyncIterable<Uint8Array>, limits: InflateLimits): Promise<DumpFacts> {
  const bytes = new ArchiveBytes(chunks);
  try {
    return await scan(new PgCustomArchive(bytes), limits);
  } catch (err) {
    if (err instanceof PgArchiveError) {
      throw new BackupAnalysisError(err.code === "unsupported" ? "unsupported_dump_format" : "corrupt_archive", `the custom-format dump cannot be read: ${err.message}`);
    }
    throw err;
  } finally {
    await bytes.close();
  }
}

async function scan(archive: PgCustomArchive, limits: InflateLimits): Promise<DumpFacts> {
  const scanner = new SqlDumpScanner({ hazards: false });
  /** The COPY statements of the tables the scanner reads, by their data's dump id. */
  const copies = new Map<number, string>();
  let decompress: (() => Transform) | null = null;
  const toc = await scanArchiveToc(archive, {
    maxKept: MAX_HAZARDS,
    // An lz4 archive is refused from its header, before its TOC is read.
    onHeader: (header) => void (decompress = decompressor(header.compression)),
    onEntry: (entry) => {
      // pg_dump's CREATE TABLE starts the defn; its first line is what the scanner reads.
      if (entry.desc === "TABLE" && entry.defn) scanner.push(Buffer.from(`${entry.defn.split("\n", 1)[0]}\n`));
      const table = entry.desc === "TABLE DATA" && entry.copyStmt ? parseCopyHeader(entry.copyStmt.trim())?.table : undefined;
      if (table !== undefined && READ_TABLES.has(table)) copies.set(entry.dumpId, `${entry.copyStmt!.trim()}\n`);
    },
  });
  const head = toc.header;

  let stored = 0;
  let inflated = 0;
  /** The stream being read (an object: assigned in the callback, closed here whatever happens). */
  const open: { sink: ClosableSink | null } = { sink: null };
  try {
    await archive.data((stream) => {
      const copy = stream.kind === "data" ? copies.get(stream.dumpId) : undefined;
      let last = 0x0a;
      if (copy) scanner.push(Buffer.from(copy));
      const out = (piece: Buffer) => {
        inflated += piece.length;
        if (inflated > limits.maxMemberBytes || inflated > stored * limits.maxRatio + RATIO_SLACK) {
          throw new BackupAnalysisError("archive_too_large", `not a backup: the custom-format dump's data would expand from ${stored} to more than ${inflated} bytes (a bomb?)`);
        }
        if (copy && piece.length > 0) {
          scanner.push(piece);
          last = piece[piece.length - 1]!;
        }
      };
      const done = () => {
        if (copy && last !== 0x0a) scanner.push(NEWLINE);
        if (copy) scanner.push(END_OF_COPY);
      };
      open.sink?.close();
      open.sink = sink(decompress, (n) => (stored += n), out, done);
      return open.sink;
    });
  } finally {
    open.sink?.close();
  }

  const facts = scanner.facts();
  facts.bytes = toc.textBytes + inflated;
  facts.looks_like_pg_dump = true;
  facts.server_version = firstWord(head.serverVersion);
  facts.pg_dump_version = firstWord(head.pgDumpVersion);
  facts.database_name = head.databaseName;
  facts.hazards = toc.hazards;
  facts.hazard_count = toc.hazardCount;
  return facts;
}

/** What inflates the data of an archive compressed with `compression`; null when stored as is. */
function decompressor(compression: PgCompression): (() => Transform) | null {
  switch (compression) {
    case "none":
      return null;
    case "gzip":
      return () => createInflate();
    case "zstd":
      return () => createZstdDecompress();
    case "lz4":
      throw new BackupAnalysisError(
        "unsupported_dump_format",
        "the custom-format dump is compressed with lz4, which is not read: make it again with pg_dump -Fc (gzip, the default) or -Z zstd, or download the backup in the zip format",
      );
  }
}

/** A data stream's sink: counts its stored bytes, inflates them if asked, and gives the result to `out`. */
type ClosableSink = PgDataSink & { close(): void };

function sink(make: (() => Transform) | null, count: (n: number) => void, out: (piece: Buffer) => void, done: () => void): ClosableSink {
  if (make === null) {
    return {
      piece(bytes) {
        count(bytes.length);
        out(bytes);
      },
      end: done,
      close: () => undefined,
    };
  }
  const inflate = make();
  /** What `out` threw (a bound passed), and the inflater's own error (the data is corrupt). */
  let failed: unknown = null;
  let broken: Error | null = null;
  // Always listened to: a stream left behind when the archive failed elsewhere may still fail
  // on what it holds, and an unheard error would end the process.
  inflate.on("error", (err) => {
    broken ??= err;
  });
  inflate.on("data", (piece: Buffer) => {
    try {
      out(piece);
    } catch (err) {
      failed = err;
      inflate.destroy(err as Error);
    }
  });
  const corrupt = (err: Error) => new BackupAnalysisError("corrupt_archive", `the custom-format dump's data does not inflate: ${err.message}`);
  const check = () => {
    if (failed) throw failed;
    if (broken) throw corrupt(broken);
  };
  const guard = async (step: () => Promise<unknown>) => {
    check();
    try {
      await step();
    } catch (err) {
      throw failed ?? corrupt(err as Error);
    }
    check();
  };
  return {
    piece: (bytes) =>
      guard(async () => {
        count(bytes.length);
        if (!inflate.write(bytes)) await once(inflate, "drain");
      }),
    end: () =>
      guard(async () => {
        inflate.end();
        await finished(inflate);
        done();
      }),
    close: () => inflate.destroy(),
  };
}

/** "15.18 (Debian 15.18-0+deb12u1)" → "15.18", as a plain dump's header line gives it. */
function firstWord(version: string | null): string | null {
  return version?.split(/\s/, 1)[0] || null;
}
