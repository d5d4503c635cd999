// Reads a plain SQL dump (pg_dump's text format) as it streams past, chunk by chunk, and keeps
// only what the analysis needs: the header's PostgreSQL versions, the database name when the
// dump names it, and a few facts from the COPY blocks of four ERP tables. Every other COPY
// block is skipped by searching for its end marker (no per-line work), so the scan runs close
// to the speed of reading the bytes, and memory stays bounded by the longest line kept. It also
// notes which of the ERP's core tables the dump creates or fills (ERP_CORE_TABLES), and reads the
// dump as psql will (@berth/protocol PsqlScript, the lexer the agent refuses dumps with) for its
// hazards: meta-commands and statements reaching the server's programs, files or roles.
import { PsqlScript, type PsqlFinding } from "@berth/protocol";
import { keepModule } from "./analysis-limits.ts";
import { parseCopyHeader, unescapeCopyField } from "./copy-text.ts";

/** What one scan of a dump found. */
export interface DumpFacts {
  bytes: number;
  looks_like_pg_dump: boolean;
  server_version: string | null;
  pg_dump_version: string | null;
  database_name: string | null;
  /** ir_module_module was in the dump (even with no rows). */
  has_module_table: boolean;
  /** The tables of ERP_CORE_TABLES the dump creates (CREATE TABLE) or fills (COPY), even with no rows. */
  core_tables: Set<string>;
  /** Installed modules (state installed, to upgrade or to remove) → their license, or null. */
  installed_modules: Map<string, string | null>;
  /** Installed modules left out of installed_modules (analysis-limits.ts keepModule). */
  modules_omitted: number;
  base_version: string | null;
  internal_users: number;
  active_partners: number;
  /** Sum of file_size over attachments kept in the file store (store_fname set); an upper bound, shared files count once per row. */
  attachment_bytes: number;
  attachment_files: number;
  /** Rows longer than the line limit, skipped. */
  skipped_long_rows: number;
  /** What the agent would refuse to load (the first MAX_HAZARDS), and how many there are. */
  hazards: PsqlFinding[];
  hazard_count: number;
}

/** Hazards kept for the analysis; the rest are counted. */
export const MAX_HAZARDS = 20;

type RowHandler = (fields: string[]) => void;

const NL = 0x0a;
const END_OF_COPY = Buffer.from("\n\\.\n");
const EMPTY = Buffer.alloc(0);
const LINE_START = Buffer.from("\n");
/** A COPY row or SQL line longer than this is skipped, not kept (e.g. attachments kept in the database). */
export const MAX_LINE_BYTES = 8 << 20;
const INSTALLED = new Set(["installed", "to upgrade", "to remove"]);
/** The tables whose rows the scanner reads (handlerFor); every other COPY block is skipped. */
export const READ_TABLES: ReadonlySet<string> = new Set(["ir_module_module", "res_users", "res_partner", "ir_attachment"]);

/**
 * Tables every database of the ERP has, in every hosted version (16.0 to 19.0, and long
 * before): the base module creates them when a database is initialised, and the ERP cannot
 * run without them. ir_module_module is the module registry it reads at every start (its
 * own "is this database initialised" test); res_users are the people who log in, each one
 * a res_partner. A dump without all three is not a database of the ERP (or only a part of
 * one), whatever its manifest says. Other base tables (ir_config_parameter, ir_model_data,
 * res_company) are as certain, but add nothing to the decision.
 */
export const ERP_CORE_TABLES = ["ir_module_module", "res_partner", "res_users"] as const;
const CORE_TABLES: ReadonlySet<string> = new Set(ERP_CORE_TABLES);
/** `CREATE TABLE [public.]name (` as pg_dump writes it (older releases leave the schema out). */
const CREATE_TABLE = /^CREATE (?:UNLOGGED )?TABLE (?:public\.|"public"\.)?"?([a-z_][a-z0-9_]*)"? \(/;

/** A streaming scanner: push() each chunk of the dump in order, then facts(). */
export class SqlDumpScanner {
  private readonly f: DumpFacts = {
    bytes: 0,
    looks_like_pg_dump: false,
    server_version: null,
    pg_dump_version: null,
    database_name: null,
    has_module_table: false,
    core_tables: new Set(),
    installed_modules: new Map(),
    modules_omitted: 0,
    base_version: null,
    internal_users: 0,
    active_partners: 0,
    attachment_bytes: 0,
    attachment_files: 0,
    skipped_long_rows: 0,
    hazards: [],
    hazard_count: 0,
  };
  /** The hazards' reader; null when the caller finds them itself (a custom-format dump: custom-dump-scanner.ts). */
  private readonly script: PsqlScript | null;
  /** In a COPY block: the handler of its rows, or null to skip it. */
  private copy: RowHandler | null | undefined = undefined;
  private carry: Buffer[] = [];
  private carryBytes = 0;
  private overlong = false;
  /** In a skipped COPY block: the last (up to 3) bytes already passed. */
  private tail: Buffer = EMPTY;

  constructor(options: { hazards?: boolean } = {}) {
    this.script = options.hazards === false ? null : new PsqlScript({ maxFindings: MAX_HAZARDS });
  }

  /** Feeds the next chunk of the dump. */
  push(chunk: Buffer): void {
    this.f.bytes += chunk.length;
    this.script?.push(chunk);
    let pos = 0;
    while (pos < chunk.length) {
      pos = this.copy === null ? this.skipCopy(chunk, pos) : this.readLine(chunk, pos);
    }
  }

  /** The facts, once the whole dump was pushed. */
  facts(): DumpFacts {
    if (this.carryBytes > 0 && this.copy === undefined) this.line(Buffer.concat(this.carry).toString("utf8"));
    this.carry = [];
    if (this.script) {
      this.script.end();
      this.f.hazards = this.script.findings;
      this.f.hazard_count = this.script.findingCount;
    }
    return this.f;
  }

  /**
   * Skips the rows of a COPY block nobody reads: finds "\n\\.\n" with indexOf. `tail` holds
   * the last bytes before `pos` (a lone "\n" right after the header), so a marker split
   * between two chunks is still found.
   */
  private skipCopy(chunk: Buffer, pos: number): number {
    const head = chunk.subarray(pos, pos + 3);
    const boundary = Buffer.concat([this.tail, head]);
    const across = boundary.indexOf(END_OF_COPY);
    if (across >= 0) return this.endCopy(pos + across + END_OF_COPY.length - this.tail.length);
    const at = chunk.indexOf(END_OF_COPY, pos);
    if (at >= 0) return this.endCopy(at + END_OF_COPY.length);
    this.tail = chunk.length - pos >= 3 ? Buffer.from(chunk.subarray(chunk.length - 3)) : Buffer.from(boundary.subarray(-3));
    return chunk.length;
  }

  private endCopy(next: number): number {
    this.copy = undefined;
    this.tail = EMPTY;
    return next;
  }

  /** Reads one line (or the start of one that continues in the next chunk). */
  private readLine(chunk: Buffer, pos: number): number {
    const nl = chunk.indexOf(NL, pos);
    if (nl < 0) {
      this.keep(chunk.subarray(pos));
      return chunk.length;
    }
    let text: string | null;
    if (this.overlong) text = null;
    else if (this.carryBytes === 0) text = this.lineText(chunk, pos, nl);
    else {
      this.keep(chunk.subarray(pos, nl));
      text = this.overlong ? null : Buffer.concat(this.carry).toString("utf8");
    }
    this.carry = [];
    this.carryBytes = 0;
    if (text === null) {
      if (this.copy) this.f.skipped_long_rows++;
      this.overlong = false;
    } else this.line(text);
    return nl + 1;
  }

  /** A whole line inside one chunk as text; outside COPY blocks only the lines worth reading are decoded. */
  private lineText(chunk: Buffer, start: number, end: number): string | null {
    if (this.copy === undefined) {
      const c = chunk[start];
      // Lines that matter start with "--", "COPY", "CREATE DATABASE" or "\connect".
      if (c !== 0x2d && c !== 0x43 && c !== 0x5c) return "";
    }
    return chunk.toString("utf8", start, end);
  }

  private keep(part: Buffer): void {
    if (this.overlong) return;
    if (this.carryBytes + part.length > MAX_LINE_BYTES) {
      this.overlong = true;
      this.carry = [];
      this.carryBytes = 0;
      return;
    }
    this.carry.push(Buffer.from(part));
    this.carryBytes += part.length;
  }

  private line(text: string): void {
    if (this.copy) {
      if (text === "\\.") this.copy = undefined;
      else this.copy(text.split("\t"));
      return;
    }
    if (text.length === 0) return;
    if (text.startsWith("COPY ")) this.startCopy(text);
    else if (text.startsWith("-- ")) this.comment(text);
    else if (text.startsWith("CREATE DATABASE ")) this.f.database_name ??= identifierAfter(text, "CREATE DATABASE ");
    else if (text.startsWith("CREATE ")) this.noteTable(CREATE_TABLE.exec(text)?.[1]);
    else if (text.startsWith("\\connect ")) this.f.database_name ??= identifierAfter(text.replace(/^\\connect\s+(-reuse-previous=\S+\s+)?/, ""), "");
  }

  private comment(text: string): void {
    if (text.startsWith("-- PostgreSQL database dump")) this.f.looks_like_pg_dump = true;
    let m = /^-- Dumped from database version (\S+)/.exec(text);
    if (m) this.f.server_version ??= m[1]!;
    m = /^-- Dumped by pg_dump version (\S+)/.exec(text);
    if (m) this.f.pg_dump_version ??= m[1]!;
  }

  private startCopy(text: string): void {
    const header = parseCopyHeader(text);
    this.noteTable(header?.table);
    this.copy = header ? (this.handlerFor(header.table, header.columns) ?? null) : null;
    if (this.copy === null) this.tail = LINE_START;
  }

  private noteTable(table: string | undefined): void {
    if (table !== undefined && CORE_TABLES.has(table)) this.f.core_tables.add(table);
  }

  /** The row handler for a table the analysis reads (READ_TABLES), from the column order of its COPY header. */
  private handlerFor(table: string, columns: string[]): RowHandler | undefined {
    const col = (name: string) => columns.indexOf(name);
    const get = (fields: string[], i: number): string | null => {
      if (i < 0 || fields[i] === undefined || fields[i] === "\\N") return null;
      return unescapeCopyField(fields[i]!);
    };
    const f = this.f;
    switch (table) {
      case "ir_module_module": {
        f.has_module_table = true;
        const [name, state, version, license] = [col("name"), col("state"), col("latest_version"), col("license")];
        return (row) => {
          const n = get(row, name);
          if (n === null) return;
          if (n === "base") f.base_version = get(row, version);
          if (INSTALLED.has(get(row, state) ?? "") && !keepModule(f.installed_modules, n, get(row, license))) f.modules_omitted++;
        };
      }
      case "res_users": {
        const [active, share] = [col("active"), col("share")];
        return (row) => {
          if (get(row, active) === "t" && get(row, share) !== "t") f.internal_users++;
        };
      }
      case "res_partner": {
        const active = col("active");
        return (row) => {
          if (active < 0 || get(row, active) === "t") f.active_partners++;
        };
      }
      case "ir_attachment": {
        const [fname, size] = [col("store_fname"), col("file_size")];
        return (row) => {
          if (get(row, fname) === null) return;
          f.attachment_files++;
          f.attachment_bytes += Number(get(row, size) ?? 0) || 0;
        };
      }
      default:
        return undefined;
    }
  }
}

function identifierAfter(text: string, prefix: string): string | null {
  const rest = text.slice(prefix.length).trim();
  const m = /^"((?:[^"]|"")+)"|^([^\s;]+)/.exec(rest);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replaceAll('""', '"') : m[2]!;
}

