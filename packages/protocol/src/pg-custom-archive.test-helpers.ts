// pg_dump custom-format archives written byte by byte (pg_backup_archiver.c WriteHead /
// WriteToc, pg_backup_custom.c's data blocks), so a test can make the versions this machine's
// pg_dump does not write (1.12, 1.13, 1.15, 1.16), a hostile TOC entry pg_dump never would
// (a function in plpython3u on a server without it), and archives that lie or end early.
import { deflateSync } from "node:zlib";

export interface ArchiveEntry {
  dumpId: number;
  desc: string;
  tag: string;
  defn?: string | null;
  copyStmt?: string | null;
  namespace?: string | null;
  /** The table's rows in COPY text (a "TABLE DATA" entry), written after the TOC. */
  data?: string;
  /** Large objects (a "BLOBS" entry): oid → bytes. */
  blobs?: Map<number, Buffer>;
}

export interface ArchiveOptions {
  /** The archive's minor version (1.x): 12 to 16 are what pg_dump 10 to 18 write. */
  minor?: number;
  /** Compress data with zlib (pg_dump's default, gzip), or not. */
  compress?: boolean;
  /** The compression algorithm byte of a 1.15+ header, whatever the data is (2: lz4). */
  algorithm?: number;
  databaseName?: string;
  serverVersion?: string;
  /** The TOC entry count the header states (default: the true one). */
  statedEntries?: number;
  /** Write a string's length as this instead of its true length (the first string of the first entry's defn). */
  lyingDefnLength?: number;
}

/** A custom-format archive of `entries`, with their data blocks after the TOC. */
export function pgCustomArchive(entries: ArchiveEntry[], opts: ArchiveOptions = {}): Buffer {
  const minor = opts.minor ?? 14;
  const compress = opts.compress ?? true;
  const out: Buffer[] = [];
  const byte = (b: number) => out.push(Buffer.from([b]));
  const int = (n: number) => {
    const b = Buffer.alloc(5);
    b[0] = n < 0 ? 1 : 0;
    b.writeUInt32LE(Math.abs(n), 1);
    out.push(b);
  };
  const str = (s: string | null | undefined, lying?: number) => {
    if (s === null || s === undefined) return int(-1);
    const bytes = Buffer.from(s, "utf8");
    int(lying ?? bytes.length);
    out.push(bytes);
  };
  out.push(Buffer.from("PGDMP"));
  [1, minor, 0, 4, 8, 1].forEach(byte); // version, int size, offset size, format custom
  if (minor >= 15) byte(opts.algorithm ?? (compress ? 1 : 0));
  else int(compress ? -1 : 0);
  for (const n of [0, 5, 8, 7, 11, 126, 0]) int(n);
  str(opts.databaseName ?? "acme");
  str(opts.serverVersion ?? "15.8");
  str(opts.serverVersion ?? "15.8");
  int(opts.statedEntries ?? entries.length);
  entries.forEach((e, i) => {
    int(e.dumpId);
    int(e.data !== undefined || e.blobs !== undefined ? 1 : 0);
    str("0");
    str("0");
    str(e.tag);
    str(e.desc);
    int(e.desc === "TABLE DATA" || e.desc === "BLOBS" ? 3 : 2);
    str(e.defn ?? null, i === 0 ? opts.lyingDefnLength : undefined);
    str(null); // dropStmt
    str(e.copyStmt ?? null);
    str(e.namespace ?? null);
    str(null); // tablespace
    if (minor >= 14) str(null); // tableam
    if (minor >= 16) int(0); // relkind
    str("odoo");
    str("false");
    str(null); // no dependencies
    byte(e.data !== undefined || e.blobs !== undefined ? 1 : 3); // position not set (as written to a pipe), or no data
    out.push(Buffer.alloc(8));
  });
  const chunks = (bytes: Buffer) => {
    const body = compress ? deflateSync(bytes) : bytes;
    // Several chunks, as pg_dump writes them.
    for (let at = 0; at < body.length; at += 4096) {
      const piece = body.subarray(at, at + 4096);
      int(piece.length);
      out.push(piece);
    }
    int(0);
  };
  for (const e of entries) {
    if (e.data !== undefined) {
      byte(1);
      int(e.dumpId);
      chunks(Buffer.from(e.data, "utf8"));
    } else if (e.blobs !== undefined) {
      byte(3);
      int(e.dumpId);
      for (const [oid, bytes] of e.blobs) {
        int(oid);
        chunks(bytes);
      }
      int(0);
    }
  }
  return Buffer.concat(out);
}

/** The smallest custom-format dump of a database of the ERP (the core tables, base at `version`, one user and partner), with `extra` entries before the data. */
export function erpCustomDump(extra: ArchiveEntry[] = [], opts: ArchiveOptions & { version?: string } = {}): Buffer {
  const version = opts.version ?? "17.0.1.3";
  const table = (dumpId: number, name: string, columns: string) => ({ dumpId, desc: "TABLE", tag: name, namespace: "public", defn: `CREATE TABLE public.${name} (\n    ${columns}\n);\n` });
  const data = (dumpId: number, name: string, columns: string, rows: string[]) => ({
    dumpId,
    desc: "TABLE DATA",
    tag: name,
    namespace: "public",
    copyStmt: `COPY public.${name} (${columns}) FROM stdin;\n`,
    data: rows.map((r) => `${r}\n`).join(""),
  });
  return pgCustomArchive(
    [
      { dumpId: 1, desc: "ENCODING", tag: "ENCODING", defn: "SET client_encoding = 'UTF8';\n" },
      { dumpId: 2, desc: "STDSTRINGS", tag: "STDSTRINGS", defn: "SET standard_conforming_strings = 'on';\n" },
      { dumpId: 3, desc: "SEARCHPATH", tag: "SEARCHPATH", defn: "SELECT pg_catalog.set_config('search_path', '', false);\n" },
      table(10, "ir_module_module", "id integer NOT NULL,\n    name character varying NOT NULL,\n    state character varying,\n    latest_version character varying,\n    license character varying"),
      table(11, "res_partner", "id integer NOT NULL,\n    name character varying,\n    active boolean"),
      table(12, "res_users", "id integer NOT NULL,\n    login character varying,\n    active boolean,\n    share boolean"),
      ...extra,
      data(20, "ir_module_module", "id, name, state, latest_version, license", [`1\tbase\tinstalled\t${version}\tLGPL-3`, `2\tweb\tinstalled\t${version}\tLGPL-3`]),
      data(21, "res_partner", "id, name, active", ["1\tAcme\tt"]),
      data(22, "res_users", "id, login, active, share", ["2\tadmin\tt\tf"]),
    ],
    opts,
  );
}
