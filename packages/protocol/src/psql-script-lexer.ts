// The psql script reader's state (psql-script.ts): psqlscan.l's start condition, the token being
// read, the statement so far, and what every lexer state shares: findings, the statement's text,
// where strings and words end. The states themselves are read in psql-script-sql.ts (plain SQL),
// psql-script-quoted.ts (strings, dollar quotes, comments) and psql-script-lines.ts (what psql
// reads itself: meta-commands and COPY data).
import { latin1, lowerWord, NL, QUOTE_CHAR } from "./psql-script-bytes.ts";
import { BODY_WORD_MAX, BODY_WORD_MIN, StatementRules, type Hazard, type PsqlFindingKind } from "./psql-script-hazards.ts";
import { StatementText } from "./psql-script-text.ts";

export interface PsqlFinding {
  /** 1-based line of the dump. */
  line: number;
  kind: PsqlFindingKind;
  /** What was found: the meta-command's line or the statement's start (at most 120 characters) and why. */
  text: string;
  /** Byte offset in the dump: everything before it can go to psql, nothing from it on. */
  offset: number;
}

/** What the reader reports (PsqlScript's public fields). */
export interface PsqlResults {
  readonly findings: PsqlFinding[];
  findingCount: number;
  readonly allowedMeta: { start: number; end: number }[];
  readonly ownerChanges: { start: number; end: number }[];
  copyRows: number;
}

// Lexer states (psqlscan.l's start conditions, with a state per character of lookahead).
export const INIT = 0;
export const DASH = 1;
export const SLASH = 2;
export const LINE_COMMENT = 3;
export const BLOCK = 4;
export const BLOCK_STAR = 5;
export const BLOCK_SLASH = 6;
export const QUOTE = 7;
export const QUOTE_Q = 8;
export const EQUOTE = 9;
export const EQUOTE_BS = 10;
export const EQUOTE_Q = 11;
export const XQS = 12;
export const XQS_DASH = 13;
export const XQS_COMMENT = 14;
export const DQUOTE = 15;
export const DQUOTE_Q = 16;
export const DOLLAR_OPEN = 17;
export const DOLLAR_BODY = 18;
export const DOLLAR_CLOSE = 19;
export const IDENT = 20;
export const NUMBER = 21;
export const COLON = 22;
export const VAR = 23;
export const VAR_Q = 24;
export const U_AMP = 25;
export const META = 26;
export const COPY_TAIL = 27;
export const COPY_DATA = 28;
export const META_SKIP = 29;

/** Identifiers and psql variable names are read up to this many bytes. */
export const WORD_MAX = 64;
/** A string's (or quoted identifier's) first bytes kept for the rules. */
export const LITERAL_MAX = 64;

/** psql's own variables are upper case (DBNAME, VERSION, ...); only they have a value here. */
const PSQL_VARIABLE = /^[A-Z][A-Z0-9_]*$/;
/** Words that move psqlscan.l's BEGIN ... END tracking; after a number, psql 15 and 16 read them differently. */
const BEGIN_WORDS: ReadonlySet<string> = new Set(["begin", "end", "case", "create", "function", "procedure", "or", "replace"]);

export class Lexer {
  readonly rules = new StatementRules();
  state = INIT;
  /** The dump's offset of the current chunk's first byte. */
  base = 0;
  line = 1;
  lineStart = true;
  stopped = false;
  /** The current string's words or text matter (StatementRules.readsBodies / readsLiteral). */
  readsString = true;
  // psqlscan.l's statement state
  parenDepth = 0;
  beginDepth = 0;
  idCount = 0;
  readonly ids = ["", "", "", ""];
  blockDepth = 0;
  // the token being read
  word = "";
  wordLen = 0;
  afterNumber = false;
  stringKind = QUOTE;
  xqsNewline = false;
  literal = "";
  dollarTag = "";
  closeLen = 0;
  closeMatches = true;
  varName = "";
  varQuote = 0;
  meta = "";
  metaStart = 0;
  metaLine = 0;
  metaAtLineStart = false;
  copyState = 0;
  /**
   * The word being read inside a string or body: its length, its bytes from earlier chunks
   * (or before a '' in the string) lowered, and its bytes in this chunk (bodySeg, bodySegLen).
   */
  bodyWordLen = 0;
  bodyWord = "";
  bodySeg = -1;
  bodySegLen = 0;
  // the statement: its text (for findings and the exact matches of psql-script-hazards.ts)
  readonly text = new StatementText();
  /** Where the next newline of the chunk is, once looked for (-1: not yet; the chunk's length: none). */
  nextNl = -1;
  /** A byte of the statement is in its text (psqlscan.l's buffer is not empty). */
  started = false;
  stmtStart = -1;
  holding = false;

  constructor(
    readonly out: PsqlResults,
    private readonly stopAtFirst: boolean,
    private readonly maxFindings: number,
    private readonly beginAtomic: boolean,
  ) {}

  find(kind: PsqlFindingKind, text: string, offset: number, line: number): void {
    this.out.findingCount++;
    if (this.out.findings.length < this.maxFindings) this.out.findings.push({ line, kind, text: text.slice(0, 160), offset });
    if (this.stopAtFirst) this.stopped = true;
  }

  /** A finding of the rules at `offset`, quoting the statement's text up to chunk index `upTo`. */
  hazard(h: Hazard | null, offset: number, upTo: number): void {
    if (h === null) return;
    this.text.take(upTo);
    const text = this.text.value;
    const start = text.length > 100 ? `${text.slice(0, 100)}…` : text;
    this.find(h.kind, `${h.why}: ${start}`, offset, this.line);
  }

  /** Counts the lines of chunk[s, e), each newline found once however many runs ask. */
  countLines(chunk: Uint8Array, s: number, e: number): void {
    if (e - s < 64) {
      for (let k = s; k < e; k++) if (chunk[k] === NL) this.line++;
      return;
    }
    let nl = this.nextNl;
    for (;;) {
      if (nl < s) {
        nl = chunk.indexOf(NL, s);
        if (nl < 0) nl = chunk.length;
      }
      if (nl >= e) break;
      this.line++;
      s = nl + 1;
    }
    this.nextNl = nl;
  }

  /** The statement's first byte, at `at`; an ALTER is held back (pendingFrom) until its end. */
  startStatement(at: number, b: number): void {
    this.stmtStart = at;
    this.holding = b === 0x41 || b === 0x61;
  }

  /** A string opens (its quote is the caller's to add to the text). */
  startString(kind: number): void {
    this.readsString = this.rules.readsBodies || this.rules.readsLiteral;
    this.stringKind = kind;
    this.state = kind;
    this.literal = "";
    this.bodyWordLen = 0;
    this.bodyWord = "";
    this.bodySeg = -1;
  }

  /** chunk[s, e), word bytes inside a string or body, go on the word being read. */
  bodyWordRun(chunk: Uint8Array, s: number, e: number): void {
    if (this.bodySeg >= 0 && this.bodySeg + this.bodySegLen !== s) this.foldBodyWord(chunk);
    if (this.bodySeg < 0) {
      this.bodySeg = s;
      this.bodySegLen = 0;
    }
    this.bodySegLen += e - s;
    this.bodyWordLen += e - s;
  }

  /** The word's bytes in this chunk go on its string (the chunk ends, or a '' comes). */
  foldBodyWord(chunk: Uint8Array): void {
    if (this.bodySeg < 0) return;
    const room = BODY_WORD_MAX - this.bodyWord.length;
    if (room > 0) this.bodyWord += latin1(chunk, this.bodySeg, this.bodySeg + Math.min(room, this.bodySegLen)).toLowerCase();
    this.bodySeg = -1;
    this.bodySegLen = 0;
  }

  /** The word inside a string or body ends (at `offset`; the text up to chunk index `upTo`). */
  endBodyWord(chunk: Uint8Array, offset: number, upTo: number): void {
    const len = this.bodyWordLen;
    if (len === 0) return;
    let w = this.bodyWord;
    if (len >= BODY_WORD_MIN && len <= BODY_WORD_MAX && this.bodySeg >= 0) {
      const seg = lowerWord(chunk, this.bodySeg, this.bodySeg + this.bodySegLen);
      w = w === "" ? seg : w + seg;
    }
    this.bodyWordLen = 0;
    this.bodyWord = "";
    this.bodySeg = -1;
    if (len < BODY_WORD_MIN || len > BODY_WORD_MAX) return;
    this.hazard(this.rules.bodyWord(w), offset, upTo);
  }

  endLiteral(at: number, upTo: number): void {
    this.hazard(this.rules.literal(this.literal, "string", this.parenDepth), at, upTo);
  }

  /**
   * An identifier ends at byte `b` (-1: the dump's end). A lone e/E, b/B, x/X, n/N before a
   * quote opens a string (E'' with backslash escapes), u/U before "&" maybe one. Returns
   * whether `b` was taken.
   */
  endWord(at: number, b: number, upTo: number): boolean {
    const w = this.word;
    if (this.afterNumber && (w.includes("$") || BEGIN_WORDS.has(w) || (w === "e" && b === QUOTE_CHAR))) {
      this.find("ambiguous", `"${w}" right after a number, which psql releases read differently`, at, this.line);
      this.state = INIT;
      return false;
    }
    if (this.wordLen === 1 && b === QUOTE_CHAR && (w === "e" || w === "b" || w === "x" || w === "n")) {
      this.startString(w === "e" ? EQUOTE : QUOTE);
      return true;
    }
    if (this.wordLen === 1 && w === "u" && b === 0x26) {
      this.state = U_AMP;
      return true;
    }
    this.state = INIT;
    this.wordToken(w, at, upTo);
    return false;
  }

  /** An identifier token, as psqlscan.l counts them for BEGIN ... END. */
  wordToken(w: string, at: number, upTo: number): void {
    const ids = this.ids;
    if (this.idCount === 0) ids.fill("");
    if (this.idCount < 4 && (w === "create" || w === "function" || w === "procedure" || w === "or" || w === "replace")) ids[this.idCount] = w[0]!;
    this.idCount++;
    const a = ids[0];
    const b = ids[1];
    const c = ids[2];
    const d = ids[3];
    if (this.beginAtomic && a === "c" && (b === "f" || b === "p" || (b === "o" && c === "r" && (d === "f" || d === "p"))) && this.parenDepth === 0) {
      if (w === "begin") this.beginDepth++;
      else if (w === "case") {
        if (this.beginDepth >= 1) this.beginDepth++;
      } else if (w === "end" && this.beginDepth > 0) this.beginDepth--;
    }
    this.hazard(this.rules.word(w, this.parenDepth), at, upTo);
  }

  endVar(at: number): void {
    if (PSQL_VARIABLE.test(this.varName)) this.find("psql_variable", `:${this.varName} (a psql variable) on line ${this.line}`, at, this.line);
    else this.rules.punct();
  }

  /** A ";" at `at`, chunk index `upTo` - 1. */
  semicolon(at: number, upTo: number): void {
    if (this.parenDepth !== 0 || this.beginDepth !== 0) {
      this.rules.punct();
      return;
    }
    this.idCount = 0;
    this.endStatement(at, upTo);
  }

  /** The statement ends at `at` (its text up to chunk index `upTo`; the next one's starts there). */
  endStatement(at: number, upTo: number): void {
    if (this.rules.endReadsText) this.text.take(upTo);
    this.hazard(this.rules.end(this.text.value, this.text.whole), at, upTo);
    if (this.holding && this.rules.ownerChange && !this.stopped) this.out.ownerChanges.push({ start: this.stmtStart, end: at + 1 });
    this.holding = false;
    const copyIn = this.rules.copyIn;
    this.rules.reset();
    this.started = false;
    if (copyIn && !this.stopped) this.state = COPY_TAIL;
    this.text.reset(this.state === COPY_TAIL ? -1 : upTo);
  }
}
