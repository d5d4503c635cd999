// The psql script reader's state (psql-script.ts): psqlscan.l's start condition, the token being
// read, the statement so far, and what every lexer state shares: findings, the statement's text,
// where strings and words end. The states themselves are read in psql-script-sql.ts (plain SQL),
// psql-script-quoted.ts (strings, dollar quotes, comments) and psql-script-lines.ts (what psql
// reads itself: meta-commands and COPY data).
import { isSpace, QUOTE_CHAR } from "./psql-script-bytes.ts";
import { BODY_WORD_MAX, BODY_WORD_MIN, KEPT_TEXT, StatementRules, type Hazard, type PsqlFindingKind } from "./psql-script-hazards.ts";

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
  ids = ["", "", "", ""];
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
  bodyWord = "";
  bodyWordLen = 0;
  // the statement's text (for findings and the exact matches of psql-script-hazards.ts)
  text = "";
  stmtStart = -1;
  holding = false;
  textWhole = true;
  textSpace = false;

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

  hazard(h: Hazard | null, offset: number): void {
    if (h === null) return;
    const start = this.text.length > 100 ? `${this.text.slice(0, 100)}…` : this.text;
    this.find(h.kind, `${h.why}: ${start}`, offset, this.line);
  }

  addText(b: number): void {
    if (this.text.length >= KEPT_TEXT) {
      this.textWhole = false;
      return;
    }
    if (isSpace(b)) {
      this.textSpace = this.text !== "";
      return;
    }
    if (this.textSpace) this.text += " ";
    this.textSpace = false;
    this.text += String.fromCharCode(b);
  }

  /** The statement's first byte, at `at`; an ALTER is held back (pendingFrom) until its end. */
  startStatement(at: number, b: number): void {
    this.stmtStart = at;
    this.holding = b === 0x41 || b === 0x61;
  }

  startString(kind: number, quote: number): void {
    this.readsString = this.rules.readsBodies || this.rules.readsLiteral;
    this.addText(quote);
    this.stringKind = kind;
    this.state = kind;
    this.literal = "";
    this.bodyWord = "";
    this.bodyWordLen = 0;
  }

  endBodyWord(at: number): void {
    const len = this.bodyWordLen;
    const w = this.bodyWord;
    this.bodyWord = "";
    this.bodyWordLen = 0;
    if (len < BODY_WORD_MIN || len > BODY_WORD_MAX) return;
    this.hazard(this.rules.bodyWord(w), at);
  }

  endLiteral(at: number): void {
    this.hazard(this.rules.literal(this.literal, "string", this.parenDepth), at);
  }

  /**
   * An identifier ends at byte `b` (-1: the dump's end). A lone e/E, b/B, x/X, n/N before a
   * quote opens a string (E'' with backslash escapes), u/U before "&" maybe one. Returns
   * whether `b` was taken.
   */
  endWord(at: number, b: number): boolean {
    const w = this.word;
    if (this.afterNumber && (w.includes("$") || BEGIN_WORDS.has(w) || (w === "e" && b === QUOTE_CHAR))) {
      this.find("ambiguous", `"${w}" right after a number, which psql releases read differently`, at, this.line);
      this.state = INIT;
      return false;
    }
    if (this.wordLen === 1 && b === QUOTE_CHAR && (w === "e" || w === "b" || w === "x" || w === "n")) {
      this.startString(w === "e" ? EQUOTE : QUOTE, b);
      return true;
    }
    if (this.wordLen === 1 && w === "u" && b === 0x26) {
      this.state = U_AMP;
      return true;
    }
    this.state = INIT;
    this.wordToken(w, at);
    return false;
  }

  /** An identifier token, as psqlscan.l counts them for BEGIN ... END. */
  wordToken(w: string, at: number): void {
    if (this.idCount === 0) this.ids = ["", "", "", ""];
    if (this.idCount < 4 && (w === "create" || w === "function" || w === "procedure" || w === "or" || w === "replace")) this.ids[this.idCount] = w[0]!;
    this.idCount++;
    const [a, b, c, d] = this.ids;
    if (this.beginAtomic && a === "c" && (b === "f" || b === "p" || (b === "o" && c === "r" && (d === "f" || d === "p"))) && this.parenDepth === 0) {
      if (w === "begin") this.beginDepth++;
      else if (w === "case") {
        if (this.beginDepth >= 1) this.beginDepth++;
      } else if (w === "end" && this.beginDepth > 0) this.beginDepth--;
    }
    this.hazard(this.rules.word(w, this.parenDepth), at);
  }

  endVar(at: number): void {
    if (PSQL_VARIABLE.test(this.varName)) this.find("psql_variable", `:${this.varName} (a psql variable) on line ${this.line}`, at, this.line);
    else this.rules.punct(":");
  }

  semicolon(at: number): void {
    if (this.parenDepth !== 0 || this.beginDepth !== 0) {
      this.rules.punct(";");
      return;
    }
    this.idCount = 0;
    this.endStatement(at);
  }

  endStatement(at: number): void {
    this.hazard(this.rules.end(this.text, this.textWhole), at);
    if (this.holding && this.rules.ownerChange && !this.stopped) this.out.ownerChanges.push({ start: this.stmtStart, end: at + 1 });
    this.holding = false;
    const copyIn = this.rules.copyIn;
    this.rules.reset();
    this.text = "";
    this.textWhole = true;
    this.textSpace = false;
    if (copyIn && !this.stopped) this.state = COPY_TAIL;
  }
}
