// A reader of pg_dump's custom archive format (pg_dump -Fc; PostgreSQL's
// src/bin/pg_dump/pg_backup_archiver.c ReadHead / ReadToc and pg_backup_custom.c), streaming
// and bounded, so a dump can be looked at without pg_restore: the header (versions, database
// name, compression), then each TOC entry with the SQL pg_restore runs for it (defn, and
// copyStmt before its data), then the data blocks after the TOC. Archive versions 1.12 to 1.16
// (pg_dump of PostgreSQL 10 to 18) are read; anything else, a string or count over its bound, or
// an archive that ends early is a PgArchiveError, never an unbounded allocation.
import { ArchiveBytes, PgArchiveError } from "./pg-custom-archive-bytes.ts";

export { ArchiveBytes, PgArchiveError } from "./pg-custom-archive-bytes.ts";

/** Archive versions read, as major * 10000 + minor * 100 + revision (K_VERS_1_12 .. K_VERS_1_16). */
const MIN_VERSION = 1_12_00;
const MAX_VERSION = 1_16_99;
/** pg_backup_archiver.h ArchiveFormat: the custom format. */
const ARCH_CUSTOM = 1;
/** pg_backup_custom.c block types after the TOC. */
const BLK_DATA = 1;
const BLK_BLOBS = 3;
/** pg_backup_archiver.h data offset flags. */
const OFFSET_FLAGS: Record<number, PgTocEntry["dataState"]> = { 1: "not_set", 2: "set", 3: "no_data" };
const COMPRESSIONS = ["none", "gzip", "lz4", "zstd"] as const;
const SECTIONS: Record<number, PgTocEntry["section"]> = { 1: "none", 2: "pre_data", 3: "data", 4: "post_data" };

export type PgCompression = (typeof COMPRESSIONS)[number];

/** Bounds of one read: a real ERP database has some tens of thousands of entries, each text a few KB. */
export interface PgArchiveLimits {
  maxEntries: number;
  /** Longest string kept (a function's body, a view's query). */
  maxStringBytes: number;
  /** Most dependencies of one entry. */
  maxDependencies: number;
}

export const PG_ARCHIVE_LIMITS: PgArchiveLimits = { maxEntries: 1_000_000, maxStringBytes: 16 << 20, maxDependencies: 100_000 };

export interface PgArchiveHeader {
  /** e.g. "1.14-0". */
  version: string;
  intSize: number;
  offSize: number;
  compression: PgCompression;
  databaseName: string | null;
  /** The server's version as pg_dump read it, e.g. "15.18 (Debian 15.18-0+deb12u1)". */
  serverVersion: string | null;
  pgDumpVersion: string | null;
  entryCount: number;
}

/** One TOC entry (pg_backup_archiver.h TocEntry). */
export interface PgTocEntry {
  dumpId: number;
  hadDumper: boolean;
  tableoid: string | null;
  oid: string | null;
  tag: string | null;
  /** What the entry is: "TABLE", "TABLE DATA", "FUNCTION", "ACL", ... */
  desc: string | null;
  section: "none" | "pre_data" | "data" | "post_data";
  /** The SQL pg_restore runs to make the object. */
  defn: string | null;
  /** The SQL run to drop it first, only under pg_restore --clean. */
  dropStmt: string | null;
  /** The COPY ... FROM stdin pg_restore runs before the entry's data. */
  copyStmt: string | null;
  namespace: string | null;
  tablespace: string | null;
  /** 1.14 and later. */
  tableam: string | null;
  /** 1.16 and later (a pg_class relkind as a character code), else 0. */
  relkind: number;
  owner: string | null;
  withOids: boolean;
  dependencies: number[];
  dataState: "not_set" | "set" | "no_data";
  dataOffset: number;
}

/** A run of data after the TOC: a table's COPY rows, or one large object of a BLOBS entry. */
export interface PgDataStream {
  kind: "data" | "blob";
  dumpId: number;
  /** The large object's oid (kind "blob"). */
  oid?: number;
}

/** Receives one data stream: its pieces as stored (compressed as the header says), then its end. */
export interface PgDataSink {
  piece(bytes: Buffer): void | Promise<void>;
  end(): void | Promise<void>;
}

/** Reads header(), then entries() to the last, then data(): each once, in this order. */
export class PgCustomArchive {
  private head: PgArchiveHeader | null = null;
  private minor = 0;

  constructor(
    readonly bytes: ArchiveBytes,
    private readonly limits: PgArchiveLimits = PG_ARCHIVE_LIMITS,
  ) {}

  async header(): Promise<PgArchiveHeader> {
    const r = this.bytes;
    if ((await r.read(5)).toString("latin1") !== "PGDMP") throw new PgArchiveError("malformed", "not a custom-format archive: it does not start with PGDMP");
    const [major, minor, rev] = [await r.byte(), await r.byte(), await r.byte()];
    const version = `${major}.${minor}-${rev}`;
    const v = major * 10000 + minor * 100 + rev;
    if (v < MIN_VERSION || v > MAX_VERSION) {
      throw new PgArchiveError("unsupported", `archive version ${version} is not read (1.12 to 1.16: pg_dump of PostgreSQL 10 to 18)`);
    }
    this.minor = minor;
    const intSize = await r.byte();
    const offSize = await r.byte();
    // ReadInt/ReadOffset add up bytes: more than 8 cannot be a real machine's (and would lose precision here).
    if (intSize < 1 || intSize > 8 || offSize < 1 || offSize > 8) throw new PgArchiveError("malformed", `implausible integer (${intSize}) or offset (${offSize}) size`);
    const format = await r.byte();
    if (format !== ARCH_CUSTOM) throw new PgArchiveError("unsupported", `archive format ${format} is not the custom format (${ARCH_CUSTOM})`);
    this.head = { version, intSize, offSize, compression: "none", databaseName: null, serverVersion: null, pgDumpVersion: null, entryCount: 0 };
    if (minor >= 15) {
      const algorithm = await r.byte();
      const compression = COMPRESSIONS[algorithm];
      if (compression === undefined) throw new PgArchiveError("malformed", `unknown compression algorithm ${algorithm}`);
      this.head.compression = compression;
    } else {
      this.head.compression = (await this.int()) !== 0 ? "gzip" : "none";
    }
    for (let i = 0; i < 7; i++) await this.int(); // the creation time, struct tm's fields
    this.head.databaseName = await this.str();
    this.head.serverVersion = await this.str();
    this.head.pgDumpVersion = await this.str();
    const count = await this.int();
    if (count < 0 || count > this.limits.maxEntries) {
      throw new PgArchiveError("malformed", `the archive claims ${count} TOC entries (at most ${this.limits.maxEntries} are read)`);
    }
    this.head.entryCount = count;
    return this.head;
  }

  /** The TOC entries, one at a time: none is kept here. */
  async *entries(): AsyncGenerator<PgTocEntry> {
    if (this.head === null) throw new Error("header() first");
    for (let i = 0; i < this.head.entryCount; i++) yield await this.entry();
  }

  private async entry(): Promise<PgTocEntry> {
    const minor = this.minor;
    const dumpId = await this.int();
    const hadDumper = (await this.int()) !== 0;
    const tableoid = await this.str();
    const oid = await this.str();
    const tag = await this.str();
    const desc = await this.str();
    const section = SECTIONS[await this.int()];
    if (section === undefined) throw new PgArchiveError("malformed", `TOC entry ${dumpId} has an unknown section`);
    const defn = await this.str();
    const dropStmt = await this.str();
    const copyStmt = await this.str();
    const namespace = await this.str();
    const tablespace = await this.str();
    const tableam = minor >= 14 ? await this.str() : null;
    const relkind = minor >= 16 ? await this.int() : 0;
    const owner = await this.str();
    const withOids = (await this.str()) === "true";
    const dependencies: number[] = [];
    for (let dep = await this.str(); dep !== null; dep = await this.str()) {
      if (dependencies.length >= this.limits.maxDependencies) {
        throw new PgArchiveError("malformed", `TOC entry ${dumpId} has more than ${this.limits.maxDependencies} dependencies`);
      }
      dependencies.push(Number.parseInt(dep, 10));
    }
    const [dataState, dataOffset] = await this.offset(dumpId);
    return { dumpId, hadDumper, tableoid, oid, tag, desc, section, defn, dropStmt, copyStmt, namespace, tablespace, tableam, relkind, owner, withOids, dependencies, dataState, dataOffset };
  }

  /**
   * The data blocks after the TOC, to the end of the archive: each stream's stored pieces to the
   * sink `open` gives for it (null: passed over). Blocks come in the order pg_dump wrote them.
   */
  async data(open: (stream: PgDataStream) => PgDataSink | null): Promise<void> {
    const r = this.bytes;
    while (!(await r.atEnd())) {
      const type = await r.byte();
      const dumpId = await this.int();
      if (type === BLK_DATA) await this.chunks(open({ kind: "data", dumpId }));
      else if (type === BLK_BLOBS) {
        for (let oid = await this.int(); oid !== 0; oid = await this.int()) await this.chunks(open({ kind: "blob", dumpId, oid }));
      } else throw new PgArchiveError("malformed", `unknown data block type ${type} at byte ${r.offset - 1 - this.head!.intSize - 1}`);
    }
  }

  /** One stream's chunks: a length, its bytes, ..., then a length of 0. */
  private async chunks(sink: PgDataSink | null): Promise<void> {
    for (let n = await this.int(); n !== 0; n = await this.int()) {
      if (n < 0) throw new PgArchiveError("malformed", `a data chunk of negative length ${n}`);
      await this.bytes.pass(n, (piece) => sink?.piece(piece));
    }
    await sink?.end();
  }

  /** ReadInt: a sign byte, then intSize bytes, least significant first. */
  private async int(): Promise<number> {
    const negative = (await this.bytes.byte()) !== 0;
    let value = 0;
    for (let i = 0; i < this.head!.intSize; i++) value += (await this.bytes.byte()) * 2 ** (8 * i);
    return negative ? -value : value;
  }

  /** ReadStr: a length (negative for NULL), then the bytes. */
  private async str(): Promise<string | null> {
    const n = await this.int();
    if (n < 0) return null;
    if (n > this.limits.maxStringBytes) throw new PgArchiveError("malformed", `a TOC string of ${n} bytes (at most ${this.limits.maxStringBytes} are read)`);
    return (await this.bytes.read(n)).toString("utf8");
  }

  /** ReadOffset: a flag byte, then offSize bytes, least significant first. */
  private async offset(dumpId: number): Promise<[PgTocEntry["dataState"], number]> {
    const flag = await this.bytes.byte();
    const state = OFFSET_FLAGS[flag];
    if (state === undefined) throw new PgArchiveError("malformed", `TOC entry ${dumpId} has an unknown data offset flag ${flag}`);
    let value = 0;
    for (let i = 0; i < this.head!.offSize; i++) value += (await this.bytes.byte()) * 2 ** (8 * i);
    return [state, value];
  }
}
