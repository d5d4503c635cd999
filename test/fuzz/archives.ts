// Backups written byte by byte, so a test can make them as wrong as an attacker would: zip and
// tar writers that take any name bytes (`../x`, `/etc/passwd`, NUL, invalid UTF-8), sizes that
// lie, a central directory cut short or counting entries that are not there, links and
// devices; and the smallest plain SQL dump the analysis takes for a database of the ERP.
// yazl and tar-stream refuse most of this (as they should), hence these few lines of format.
import { crc32, deflateRawSync, gzipSync } from "node:zlib";

export interface ZipEntry {
  name: string | Buffer;
  data: Buffer;
  /** 0 stored, 8 deflated (default: stored). */
  method?: 0 | 8;
  /** Sizes written in the headers instead of the true ones. */
  declaredSize?: number;
  declaredCompressedSize?: number;
  /** General purpose flags (bit 11: the name is UTF-8). */
  flags?: number;
}

export interface ZipOptions {
  /** The central directory keeps only its first this-many bytes (the end record still points at it). */
  truncateCentralDirectory?: number;
  /** The entry count the end record states (default: the true one). */
  statedEntries?: number;
}

const nameBytes = (name: string | Buffer) => (typeof name === "string" ? Buffer.from(name, "utf8") : name);

/** A zip archive of `entries` in order, with a central directory and end record as the format has them. */
export function zipBytes(entries: ZipEntry[], opts: ZipOptions = {}): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const e of entries) {
    const name = nameBytes(e.name);
    const method = e.method ?? 0;
    const body = method === 8 ? deflateRawSync(e.data) : e.data;
    const crc = crc32(e.data);
    const size = e.declaredSize ?? e.data.length;
    const compressed = e.declaredCompressedSize ?? body.length;
    const flags = e.flags ?? (typeof e.name === "string" && Buffer.byteLength(e.name) !== e.name.length ? 0x800 : 0);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(flags, 6);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(compressed, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, body);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(flags, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc >>> 0, 16);
    central.writeUInt32LE(compressed, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + body.length;
  }
  let directory = Buffer.concat(centrals);
  const directorySize = directory.length;
  if (opts.truncateCentralDirectory !== undefined) directory = directory.subarray(0, opts.truncateCentralDirectory);
  const count = opts.statedEntries ?? entries.length;
  // Past 65,535 entries the count is in the zip64 end record (and its locator), as zip tools write it.
  const zip64: Buffer[] = [];
  if (count >= 0xffff) {
    const record = Buffer.alloc(56);
    record.writeUInt32LE(0x06064b50, 0);
    record.writeBigUInt64LE(44n, 4);
    record.writeUInt16LE(45, 12);
    record.writeUInt16LE(45, 14);
    record.writeBigUInt64LE(BigInt(count), 24);
    record.writeBigUInt64LE(BigInt(count), 32);
    record.writeBigUInt64LE(BigInt(directorySize), 40);
    record.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + directory.length), 8);
    locator.writeUInt32LE(1, 16);
    zip64.push(record, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Math.min(count, 0xffff), 8);
  end.writeUInt16LE(Math.min(count, 0xffff), 10);
  end.writeUInt32LE(directorySize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, ...zip64, end]);
}

export interface TarEntry {
  name: string | Buffer;
  data?: Buffer;
  /** ustar type flag: "0" file, "1" hard link, "2" symlink, "3"/"4" devices, "5" folder, "6" FIFO. */
  type?: "0" | "1" | "2" | "3" | "4" | "5" | "6";
  linkname?: string;
  /** Size written in the header instead of the true one (the data written is still `data`). */
  declaredSize?: number;
}

function octal(value: number, width: number): string {
  return value.toString(8).padStart(width - 1, "0") + "\0";
}

/** One 512-byte ustar header. */
function tarHeader(e: TarEntry, size: number): Buffer {
  const h = Buffer.alloc(512);
  nameBytes(e.name).copy(h, 0, 0, 100);
  h.write(octal(0o644, 8), 100, "latin1");
  h.write(octal(0, 8), 108, "latin1");
  h.write(octal(0, 8), 116, "latin1");
  h.write(octal(size, 12), 124, "latin1");
  h.write(octal(0, 12), 136, "latin1");
  h.fill(0x20, 148, 156);
  h.write(e.type ?? "0", 156, "latin1");
  if (e.linkname) h.write(e.linkname.slice(0, 100), 157, "latin1");
  h.write("ustar\u000000", 257, "latin1");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + " ", 148, "latin1");
  return h;
}

/** A tar (gzipped when asked) of `entries` in order, ended by two zero blocks unless `truncate`. */
export function tarBytes(entries: TarEntry[], opts: { gzip?: boolean; truncate?: number } = {}): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = e.data ?? Buffer.alloc(0);
    blocks.push(tarHeader(e, e.declaredSize ?? data.length), data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  let out = Buffer.concat(blocks);
  if (opts.truncate !== undefined) out = out.subarray(0, opts.truncate);
  return opts.gzip ? gzipSync(out) : out;
}

/**
 * The smallest plain dump the analysis takes for a database of the ERP: pg_dump's header,
 * the three core tables, `base` installed at `version` (17.0.1.3: ERP 17.0), one user and
 * partner. `extra` goes after the header (a test's hostile SQL).
 */
export function erpDump(extra = "", version = "17.0.1.3"): Buffer {
  return Buffer.from(
    [
      "--",
      "-- PostgreSQL database dump",
      "--",
      "",
      "-- Dumped from database version 15.8",
      "-- Dumped by pg_dump version 15.8",
      "",
      "SET statement_timeout = 0;",
      extra,
      "CREATE TABLE public.ir_module_module (id integer NOT NULL, name character varying NOT NULL, state character varying, latest_version character varying, license character varying);",
      "CREATE TABLE public.res_partner (id integer NOT NULL, name character varying, active boolean);",
      "CREATE TABLE public.res_users (id integer NOT NULL, login character varying, active boolean, share boolean);",
      "COPY public.ir_module_module (id, name, state, latest_version, license) FROM stdin;",
      `1\tbase\tinstalled\t${version}\tLGPL-3`,
      `2\tweb\tinstalled\t${version}\tLGPL-3`,
      "\\.",
      "",
      "COPY public.res_partner (id, name, active) FROM stdin;",
      "1\tAcme\tt",
      "\\.",
      "",
      "COPY public.res_users (id, login, active, share) FROM stdin;",
      "2\tadmin\tt\tf",
      "\\.",
      "",
      "--",
      "-- PostgreSQL database dump complete",
      "--",
      "",
    ].join("\n"),
  );
}
