// The reading half of the analysis: detects the format from the first bytes, then streams
// the parts that matter (manifest.json, the SQL dump) through the dump scanner and sums the
// file store from member sizes. Each format's reader returns the same ReadBackup.
import type { Readable } from "node:stream";
import { BackupAnalysisError, type BackupFormat, type BackupSource, type FilestoreLocation } from "./analysis-types.ts";
import { detectFormat, HEAD_BYTES, looksLikeSql } from "./detect-format.ts";
import { dumpMemberRank } from "@berth/protocol";
import { Warnings, type InflateLimits } from "./analysis-limits.ts";
import { displayName, memberRole } from "./member-names.ts";
import { MAX_MANIFEST_BYTES, parseManifest, type BackupManifest } from "./manifest.ts";
import { scanCustomDump } from "./custom-dump-scanner.ts";
import { SqlDumpScanner, type DumpFacts } from "./sql-dump-scanner.ts";
import { walkTar } from "./tar-archive.ts";
import { openZip, type ZipMember } from "./zip-archive.ts";

export interface ReadBackup {
  format: BackupFormat;
  dumpPath: string | null;
  dump: DumpFacts;
  manifest: BackupManifest | null;
  hasManifest: boolean;
  filestore: (FilestoreLocation & { bytes: number }) | null;
  /** Bounded (analysis-limits.ts Warnings): like ones collapsed, at most MAX_WARNINGS. */
  warnings: string[];
  /** Warnings left out past MAX_WARNINGS. */
  warningsOmitted: number;
}

/** Reads the backup once (zip: the central directory, then manifest and dump) and returns what it holds. */
export async function readBackup(source: BackupSource, limits: InflateLimits, signal?: AbortSignal): Promise<ReadBackup> {
  if (source.size === 0) throw new BackupAnalysisError("empty_file", "not a backup: the file is empty");
  const head = await readSome(await source.open({ start: 0, end: Math.min(source.size, HEAD_BYTES) - 1 }), HEAD_BYTES);
  const kind = detectFormat(head);
  switch (kind) {
    case "zip":
      return readZip(source, limits, signal);
    case "gzip":
    case "tar":
      return readTar(source, kind === "gzip", limits, signal);
    case "sql":
    case "pg_custom": {
      const dump = await scanDump(await source.open(), limits, signal);
      return { format: kind, dumpPath: null, dump, manifest: null, hasManifest: false, filestore: null, warnings: [], warningsOmitted: 0 };
    }
    default:
      throw new BackupAnalysisError("not_a_backup", "not a backup: the file is neither a zip or tar archive nor a PostgreSQL dump");
  }
}

/** Up to `max` bytes from the start of a stream, then closes it. */
async function readSome(stream: Readable, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const chunk of stream) {
    parts.push(chunk as Buffer);
    n += (chunk as Buffer).length;
    if (n >= max) break;
  }
  stream.destroy();
  return Buffer.concat(parts).subarray(0, max);
}

/**
 * Streams a dump through its scanner, chosen by its first bytes: a custom-format archive
 * (PGDMP) through custom-dump-scanner.ts, SQL through SqlDumpScanner; anything else is refused.
 */
async function scanDump(stream: Readable, limits: InflateLimits, signal?: AbortSignal): Promise<DumpFacts> {
  const abort = () => stream.destroy(signal?.reason as Error);
  signal?.addEventListener("abort", abort, { once: true });
  const chunks = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  try {
    signal?.throwIfAborted();
    // The first HEAD_BYTES are looked at before anything is scanned.
    const head: Buffer[] = [];
    let headBytes = 0;
    while (headBytes < HEAD_BYTES) {
      const next = await chunks.next();
      if (next.done) break;
      head.push(next.value);
      headBytes += next.value.length;
    }
    const all = (async function* () {
      yield* head;
      for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
    })();
    const first = Buffer.concat(head).subarray(0, HEAD_BYTES);
    if (first.toString("latin1", 0, 5) === "PGDMP") return await scanCustomDump(all, limits);
    if (!looksLikeSql(first)) throw new BackupAnalysisError("not_a_backup", "not a backup: the database dump is neither a PostgreSQL SQL dump nor a custom-format one");
    const scanner = new SqlDumpScanner();
    for await (const chunk of all) scanner.push(chunk);
    return scanner.facts();
  } finally {
    signal?.removeEventListener("abort", abort);
    await chunks.return?.();
  }
}

function manifestFrom(text: string, warnings: Warnings): BackupManifest | null {
  const manifest = parseManifest(text);
  if (!manifest) warnings.add("manifest.json is not a JSON object; it was ignored");
  return manifest;
}

/** An unsafe member name, noted once per archive with the count and the first one. */
function noteUnsafe(warnings: Warnings, name: string): void {
  warnings.note("unsafe_name", `member ${displayName(name)} has an unsafe name and was ignored`, (n) => `${n} members with unsafe names were ignored, e.g. ${displayName(name)}`);
}

/** The refusal of an archive holding its dump twice under one name: the analysis read one, a restore could read the other. */
function duplicateDump(name: string): BackupAnalysisError {
  return new BackupAnalysisError("duplicate_dump_member", `not a backup: the archive holds ${displayName(name)} more than once, so which one a restore would read is not certain; pack the backup again with one dump`);
}

async function readZip(source: BackupSource, limits: InflateLimits, signal?: AbortSignal): Promise<ReadBackup> {
  const warnings = new Warnings();
  const fileStore = fileStoreTally();
  let members = 0;
  let unsafe = 0;
  // Kept for reading, a bounded few whatever the archive holds: the dump (@berth/protocol's
  // rule, shared with the agent: the best-ranked name, the earliest of equals), the first
  // manifest.json and compressed file store. Every other entry is counted as it passes.
  let dump: { name: string; rank: number; copies: number } | null = null;
  let manifestMember: ZipMember | undefined;
  let archive: ZipMember | undefined;
  const zip = await openZip(
    source,
    (m: ZipMember) => {
      members++;
      switch (memberRole(m.name)) {
        case "filestore_file":
          fileStore.add(m.name, m.size);
          return false;
        case "dump": {
          if (m.name === dump?.name) {
            dump.copies++;
            return false;
          }
          const rank = dumpMemberRank(m.name)!;
          if (dump !== null && rank >= dump.rank) return false;
          dump = { name: m.name, rank, copies: 1 };
          return true;
        }
        case "manifest":
          if (manifestMember) return false;
          manifestMember = m;
          return true;
        case "filestore_archive":
          if (archive) return false;
          archive = m;
          return true;
        default:
          return false;
      }
    },
    limits,
    (name) => {
      unsafe++;
      noteUnsafe(warnings, name);
    },
  );
  try {
    if (members === 0 && unsafe === 0) throw new BackupAnalysisError("empty_archive", "not a backup: the zip archive is empty");
    const chosen = dump as { name: string; copies: number } | null;
    if (chosen === null) throw new BackupAnalysisError("no_database_dump", "no database dump found: the archive holds no dump.sql");
    if (chosen.copies > 1) throw duplicateDump(chosen.name);
    let manifest: BackupManifest | null = null;
    const manifestEntry = manifestMember as ZipMember | undefined;
    if (manifestEntry) {
      if (manifestEntry.size > MAX_MANIFEST_BYTES) warnings.add("manifest.json is too large; it was ignored");
      else manifest = manifestFrom((await readSome(await zip.openMember(manifestEntry.name), MAX_MANIFEST_BYTES)).toString("utf8"), warnings);
    }
    const facts = await scanDump(await zip.openMember(chosen.name), limits, signal);
    const filestore = fileStore.result(archive, warnings);
    return {
      format: "zip",
      dumpPath: chosen.name,
      dump: facts,
      manifest,
      hasManifest: manifestEntry !== undefined,
      filestore,
      warnings: warnings.list(),
      warningsOmitted: warnings.omittedCount,
    };
  } finally {
    zip.close();
  }
}

/** The file store members an archive holds, counted as they pass: files, bytes, and the folder they sit in. */
function fileStoreTally() {
  let files = 0;
  let bytes = 0;
  let root = "filestore";
  return {
    add(name: string, size: number) {
      files++;
      bytes += size;
      root = name.slice(0, name.indexOf("filestore") + "filestore".length);
    },
    /** The folder when files were seen; else the compressed file store archive, if any (with a warning). */
    result(archive: { name: string; size: number } | undefined, warnings: Warnings): ReadBackup["filestore"] {
      if (files > 0) return { kind: "directory", path: root, file_count: files, bytes };
      if (!archive) return null;
      warnings.add(`the file store is a compressed archive (${archive.name}); its size is the compressed size`);
      return { kind: "archive", path: archive.name, file_count: 0, bytes: archive.size };
    },
  };
}

async function readTar(source: BackupSource, gzipped: boolean, limits: InflateLimits, signal?: AbortSignal): Promise<ReadBackup> {
  const warnings = new Warnings();
  const fileStore = fileStoreTally();
  let members = 0;
  let unsafe = 0;
  let dump: DumpFacts | null = null;
  let dumpPath: string | null = null;
  let manifest: BackupManifest | null = null;
  let hasManifest = false;
  let archive: { name: string; size: number } | undefined;
  const drain = (body: Readable) =>
    new Promise<void>((resolve, reject) => {
      body.on("end", resolve).on("error", reject);
      body.resume();
    });
  await walkTar(
    await source.open(),
    gzipped,
    limits,
    async (m, body) => {
      members++;
      const role = memberRole(m.name);
      if (role === "filestore_file") {
        fileStore.add(m.name, m.size);
      } else if (role === "dump" && dump === null) {
        dumpPath = m.name;
        dump = await scanDump(body, limits, signal);
        return;
      } else if (role === "dump" && m.name === dumpPath) {
        throw duplicateDump(m.name);
      } else if (role === "dump") {
        warnings.note("second_dump", `a second dump ${displayName(m.name)} was ignored`, (n) => `${n} more dumps were ignored, e.g. ${displayName(m.name)}`);
      } else if (role === "manifest" && !hasManifest) {
        hasManifest = true;
        if (m.size > MAX_MANIFEST_BYTES) warnings.add("manifest.json is too large; it was ignored");
        else {
          const parts: Buffer[] = [];
          for await (const chunk of body) parts.push(chunk as Buffer);
          const text = Buffer.concat(parts).toString("utf8");
          manifest = manifestFrom(text, warnings);
          return;
        }
      } else if (role === "filestore_archive") archive ??= m;
      await drain(body);
    },
    (name) => {
      unsafe++;
      noteUnsafe(warnings, name);
    },
    signal,
  );
  if (members === 0 && unsafe === 0) throw new BackupAnalysisError("empty_archive", `not a backup: the ${gzipped ? "tar.gz" : "tar"} archive is empty`);
  if (dump === null) throw new BackupAnalysisError("no_database_dump", "no database dump found: the archive holds no dump.sql");
  const filestore = fileStore.result(archive, warnings);
  return { format: gzipped ? "tar.gz" : "tar", dumpPath, dump, manifest, hasManifest, filestore, warnings: warnings.list(), warningsOmitted: warnings.omittedCount };
}
