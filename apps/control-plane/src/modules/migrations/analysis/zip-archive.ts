// A zip backup read through ranged reads of the stored object: yauzl walks the central
// directory at the end of the file (through a small read-ahead window, so thousands of
// file-store entries cost a handful of reads, not one per entry), then members are streamed
// and inflated one at a time. Nothing is written to disk and nothing is held whole.
import type { Readable } from "node:stream";
import { Transform } from "node:stream";
import yauzl from "yauzl";
import { BackupAnalysisError, type BackupSource } from "./analysis-types.ts";
import { DEFAULT_INFLATE_LIMITS, type InflateLimits } from "./analysis-limits.ts";
import { isUnsafeMemberName, normalizeMemberName } from "./member-names.ts";

export { DEFAULT_INFLATE_LIMITS, type InflateLimits } from "./analysis-limits.ts";

export interface ZipMember {
  name: string;
  size: number;
  compressedSize: number;
}

const WINDOW = 1 << 20;

/** Exported by yauzl 3 but missing from its types: decodes a name as yauzl itself would (UTF-8 flag, Info-ZIP extra field, else CP437). */
const getFileNameLowLevel = (yauzl as unknown as { getFileNameLowLevel(flags: number, name: Buffer, extra: unknown, strict: boolean): string })
  .getFileNameLowLevel;

/** yauzl's reader over `source.open(range)`, with a read-ahead window for the many small reads of the central directory. */
class SourceReader extends yauzl.RandomAccessReader {
  private window: { start: number; bytes: Buffer } | null = null;

  constructor(private readonly source: BackupSource) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    // yauzl's end is exclusive; the source's is inclusive (as HTTP Range).
    return lazyStream(() => this.source.open({ start, end: end - 1 }));
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: (err: Error | null) => void): void {
    const w = this.window;
    if (length <= WINDOW && w && position >= w.start && position + length <= w.start + w.bytes.length) {
      w.bytes.copy(buffer, offset, position - w.start, position - w.start + length);
      // Never call back synchronously: yauzl reads the next entry from inside this callback,
      // so a cached central directory of thousands of entries would recurse past the stack.
      process.nextTick(callback, null);
      return;
    }
    if (length > WINDOW) {
      super.read(buffer, offset, length, position, callback);
      return;
    }
    const end = Math.min(this.source.size, position + WINDOW);
    readRange(this.source, position, end).then(
      (bytes) => {
        if (bytes.length < length) return callback(new Error("unexpected end of the zip file"));
        this.window = { start: position, bytes };
        bytes.copy(buffer, offset, 0, length);
        callback(null);
      },
      (err: Error) => callback(err),
    );
  }
}

async function readRange(source: BackupSource, start: number, endExclusive: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of await source.open({ start, end: endExclusive - 1 })) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

/** A stream whose source is opened on first read. */
function lazyStream(open: () => Promise<Readable>): Readable {
  const out = new Transform({ transform: (chunk, _e, cb) => cb(null, chunk) });
  open().then(
    (inner) => {
      inner.on("error", (err) => out.destroy(err));
      out.on("close", () => inner.destroy());
      inner.pipe(out);
    },
    (err: Error) => out.destroy(err),
  );
  return out;
}

/** An open zip: the members kept (safe names only), how many entries it has, and a way to stream a kept member. */
export interface ZipArchive {
  members: ZipMember[];
  /** Entries of the central directory, whatever they are. */
  entryCount: number;
  /** Streams a kept member, inflated, within the limits. */
  openMember(name: string): Promise<Readable>;
  close(): void;
}

/**
 * Opens the zip and walks its central directory. `onEntry` sees every safe member and says
 * whether to keep it for openMember (the file store's thousands of entries are only summed;
 * the caller keeps a bounded few); `onUnsafe` sees the names that are never used. A directory
 * of more than limits.maxMembers entries is refused from its end record, before it is read.
 */
export async function openZip(
  source: BackupSource,
  onEntry: (member: ZipMember) => boolean,
  limits: InflateLimits = DEFAULT_INFLATE_LIMITS,
  onUnsafe: (name: string) => void = () => undefined,
): Promise<ZipArchive> {
  const reader = new SourceReader(source);
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromRandomAccessReader(reader, source.size, { lazyEntries: true, decodeStrings: false, autoClose: false }, (err, z) =>
      err ? reject(corrupt(err)) : resolve(z),
    ),
  );
  if (zip.entryCount > limits.maxMembers) {
    zip.close();
    throw tooManyMembers("zip", limits.maxMembers, zip.entryCount);
  }
  const kept = new Map<string, yauzl.Entry>();
  const members: ZipMember[] = [];
  await new Promise<void>((resolve, reject) => {
    zip.on("error", (err: Error) => reject(corrupt(err)));
    zip.on("end", () => resolve());
    zip.on("entry", (entry: yauzl.Entry) => {
      const raw = getFileNameLowLevel(entry.generalPurposeBitFlag, entry.fileName as unknown as Buffer, entry.extraFields, false);
      if (isUnsafeMemberName(raw)) onUnsafe(raw);
      else if (!raw.endsWith("/")) {
        const member = { name: normalizeMemberName(raw), size: entry.uncompressedSize, compressedSize: entry.compressedSize };
        if (onEntry(member)) {
          kept.set(member.name, entry);
          members.push(member);
        }
      }
      zip.readEntry();
    });
    zip.readEntry();
  });
  return {
    members,
    entryCount: zip.entryCount,
    async openMember(name) {
      const entry = kept.get(name);
      if (!entry) throw new Error(`no member ${name}`);
      checkRatio(name, entry.uncompressedSize, entry.compressedSize, limits);
      const stream = await new Promise<Readable>((resolve, reject) =>
        zip.openReadStream(entry, (err, s) => (err ? reject(corrupt(err)) : resolve(s))),
      );
      const capped = countingCap(name, Math.min(entry.uncompressedSize, limits.maxMemberBytes));
      stream.on("error", (err: Error) => capped.destroy(corrupt(err)));
      capped.on("close", () => stream.destroy());
      return stream.pipe(capped);
    },
    close: () => zip.close(),
  };
}

/** The refusal of an archive with more entries than the analysis reads. */
export function tooManyMembers(format: string, max: number, count?: number): BackupAnalysisError {
  return new BackupAnalysisError(
    "archive_too_many_members",
    `not a backup: the ${format} archive holds ${count ?? `more than ${max}`} members (files, folders and links); the analysis reads at most ${max}: pack the database dump, manifest and file store alone`,
  );
}

function checkRatio(name: string, size: number, compressed: number, limits: InflateLimits): void {
  if (size > limits.maxMemberBytes || (size > 1 << 20 && size > compressed * limits.maxRatio)) {
    throw new BackupAnalysisError(
      "archive_too_large",
      `not a backup: member ${JSON.stringify(name)} would expand from ${compressed} to ${size} bytes (a zip bomb?)`,
    );
  }
}

/** Fails the stream at the first byte past `cap` (yauzl checks the declared size too). */
function countingCap(name: string, cap: number): Transform {
  let seen = 0;
  return new Transform({
    readableHighWaterMark: 1 << 20,
    transform(chunk: Buffer, _e, cb) {
      seen += chunk.length;
      if (seen > cap) cb(new BackupAnalysisError("archive_too_large", `not a backup: member ${JSON.stringify(name)} expands past ${cap} bytes`));
      else cb(null, chunk);
    },
  });
}

function corrupt(err: Error): Error {
  if (err instanceof BackupAnalysisError) return err;
  return new BackupAnalysisError("corrupt_archive", `not a backup: the zip archive is damaged (${err.message})`);
}
