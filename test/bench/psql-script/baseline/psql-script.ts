// FROZEN COPY, used only by bench:psql-script (the old/new ratio) and psql-script-baseline.test.ts
// (the new lexer finds what this one finds): packages/protocol/src/psql-script.ts as of commit 1a16c36,
// before the lexer was split and sped up. Do not edit or import it from shipped code.
// Reads a plain SQL dump as psql reads it (src/fe_utils/psqlscan.l and psql's COPY handling),
// chunk by chunk, keeping only the lexer's state: which quote, comment or dollar-quoted body it
// is in, COPY ... FROM stdin data (which starts after a real, complete COPY statement and ends
// at a line "\."), and what the current statement is (psql-script-hazards.ts). A backslash that
// psql would read as a meta-command (at a line's start, after spaces, after a statement on the
// same line) is a finding unless it is pg_dump's own \restrict / \unrestrict line; so is every
// statement that reaches the server's programs or files or changes roles.
//
// Where psql releases read the same text differently (a quote right after a number: `1e'...'`
// is an E'' string for psql 15 and a plain one for 16; PostgreSQL 16's `0x$$`), the text is
// a finding ("ambiguous") rather than a guess. The scanner reads standard_conforming_strings
// as on (pg_dump's `SET standard_conforming_strings = on;`) and client_encoding as UTF8; a
// statement that changes either is a finding too (session_setting), as the rest would then
// be read otherwise by psql.
//
// Both the agent (refusing a dump before psql runs it) and the control plane (reporting it in a
// migration's analysis) use it, so what is refused is what was reported.
import { BODY_WORD_MAX, BODY_WORD_MIN, KEPT_TEXT, StatementRules, type Hazard, type PsqlFindingKind } from "./psql-script-hazards.ts";

export { ALLOWED_EXTENSIONS, CLIENT_SIDE_KINDS, type PsqlFindingKind } from "./psql-script-hazards.ts";

export interface PsqlFinding {
  /** 1-based line of the dump. */
  line: number;
  kind: PsqlFindingKind;
  /** What was found: the meta-command's line or the statement's start (at most 120 characters) and why. */
  text: string;
  /** Byte offset in the dump: everything before it can go to psql, nothing from it on. */
  offset: number;
}

export interface PsqlScriptOptions {
  /** Stop at the first finding (the agent) or go on and collect them (the analysis). */
  stopAtFirst?: boolean;
  /** Findings kept (the count goes on); 20 by default. */
  maxFindings?: number;
  /**
   * psql 14 and later do not end a CREATE FUNCTION ... BEGIN ATOMIC at the semicolons of its
   * body (psqlscan.l begin_depth); older ones do. True (the default) reads as 14 and later.
   */
  beginAtomic?: boolean;
}

/** pg_dump's own meta-commands (pg_dump 17.6, 16.10, 15.14, 14.19, 13.22 and later), alone on their line. */
const ALLOWED_META = /^\\(?:restrict|unrestrict) [A-Za-z0-9]+\r?$/;
/** A meta-command's line is read up to this many bytes to decide. */
const META_MAX = 256;
const DOLLAR_TAG_MAX = 1024;
const WORD_MAX = 64;
/** An ALTER statement is held back this long to see whether it is only an OWNER TO. */
const HOLD_MAX = 4096;
const LITERAL_MAX = 64;

// Lexer states (psqlscan.l's start conditions, with a state per character of lookahead).
const INIT = 0;
const DASH = 1;
const SLASH = 2;
const LINE_COMMENT = 3;
const BLOCK = 4;
const BLOCK_STAR = 5;
const BLOCK_SLASH = 6;
const QUOTE = 7;
const QUOTE_Q = 8;
const EQUOTE = 9;
const EQUOTE_BS = 10;
const EQUOTE_Q = 11;
const XQS = 12;
const XQS_DASH = 13;
const XQS_COMMENT = 14;
const DQUOTE = 15;
const DQUOTE_Q = 16;
const DOLLAR_OPEN = 17;
const DOLLAR_BODY = 18;
const DOLLAR_CLOSE = 19;
const IDENT = 20;
const NUMBER = 21;
const COLON = 22;
const VAR = 23;
const VAR_Q = 24;
const U_AMP = 25;
const META = 26;
const COPY_TAIL = 27;
const COPY_DATA = 28;
const META_SKIP = 29;

// COPY data, per line: at its start, after "\", after "\.", after "\.\r", inside it.
const C_START = 0;
const C_BS = 1;
const C_BS_DOT = 2;
const C_BS_DOT_CR = 3;
const C_MID = 4;

const NL = 0x0a;
const CR = 0x0d;
const BACKSLASH = 0x5c;
const QUOTE_CHAR = 0x27;
const DQUOTE_CHAR = 0x22;
const DOLLAR = 0x24;

const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === NL || b === CR || b === 0x0c || b === 0x0b;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
/** [A-Za-z\200-\377_] */
const isIdentStart = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || b === 0x5f || b >= 0x80;
/** [A-Za-z\200-\377_0-9] (an identifier also takes "$") */
const isIdentCont = (b: number) => isIdentStart(b) || isDigit(b);
/** A word inside a string or body, as the hazard words are spelled. */
const isWordChar = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || b === 0x5f || isDigit(b);
/** psql's own variables are upper case (DBNAME, VERSION, ...); only they have a value here. */
const PSQL_VARIABLE = /^[A-Z][A-Z0-9_]*$/;
/** Words that move psqlscan.l's BEGIN ... END tracking; after a number, psql 15 and 16 read them differently. */
const BEGIN_WORDS: ReadonlySet<string> = new Set(["begin", "end", "case", "create", "function", "procedure", "or", "replace"]);

/** A streaming reader of a psql script: push() each chunk in order, then end(). */
export class PsqlScript {
  readonly findings: PsqlFinding[] = [];
  findingCount = 0;
  /** Byte ranges of pg_dump's own \restrict / \unrestrict lines seen so far (the agent blanks them). */
  readonly allowedMeta: { start: number; end: number }[] = [];
  /** Byte ranges of ALTER ... OWNER TO statements (StatementRules.ownerChange; the agent blanks them). */
  readonly ownerChanges: { start: number; end: number }[] = [];
  /** Lines of COPY data seen (for the record). */
  copyRows = 0;

  private readonly stopAtFirst: boolean;
  private readonly maxFindings: number;
  private readonly beginAtomic: boolean;
  private readonly rules = new StatementRules();

  private state = INIT;
  private base = 0;
  private line = 1;
  private lineStart = true;
  private stopped = false;
  private afterNul = false;
  /** The current string's words or text matter (StatementRules.readsBodies / readsLiteral). */
  private readsString = true;
  // psqlscan.l's statement state
  private parenDepth = 0;
  private beginDepth = 0;
  private idCount = 0;
  private ids = ["", "", "", ""];
  private blockDepth = 0;
  // the token being read
  private word = "";
  private wordLen = 0;
  private afterNumber = false;
  private stringKind = QUOTE;
  private xqsNewline = false;
  private literal = "";
  private dollarTag = "";
  private closeLen = 0;
  private closeMatches = true;
  private varName = "";
  private varQuote = 0;
  private meta = "";
  private metaStart = 0;
  private metaLine = 0;
  private metaAtLineStart = false;
  private copyState = C_START;
  private bodyWord = "";
  private bodyWordLen = 0;
  // the statement's text (for findings and the exact matches of psql-script-hazards.ts)
  private text = "";
  private stmtStart = -1;
  private holding = false;
  private textWhole = true;
  private textSpace = false;

  constructor(options: PsqlScriptOptions = {}) {
    this.stopAtFirst = options.stopAtFirst ?? false;
    this.maxFindings = options.maxFindings ?? 20;
    this.beginAtomic = options.beginAtomic ?? true;
  }

  /** Bytes from here on are undecided (a meta-command's, a short ALTER's), not to pass yet; null when none. */
  get pendingFrom(): number | null {
    if (this.state === META) return this.metaStart;
    if (this.holding && this.base - this.stmtStart <= HOLD_MAX) return this.stmtStart;
    this.holding = false;
    return null;
  }

  /** The first finding, if any. */
  get first(): PsqlFinding | undefined {
    return this.findings[0];
  }

  push(chunk: Uint8Array): void {
    let from = 0;
    while (!this.stopped && from < chunk.length) {
      if (this.afterNul) {
        // psql reads lines as C strings: what follows a NUL on its line is not read.
        const nl = chunk.indexOf(NL, from);
        if (nl < 0) break;
        this.afterNul = false;
        from = nl;
      }
      const nul = chunk.indexOf(0, from);
      this.scan(chunk, from, nul < 0 ? chunk.length : nul);
      if (nul < 0 || this.stopped) break;
      this.find("ambiguous", "a NUL byte, which psql drops with the rest of its line", this.base + nul, this.line);
      this.afterNul = true;
      from = nul + 1;
    }
    this.base += chunk.length;
  }

  /** At the end of the dump: what psql does with what is left (it sends an unfinished statement). */
  end(): void {
    if (this.stopped) return;
    if (this.state === META) this.decideMeta(this.base);
    if (this.state === IDENT) this.endWord(this.base, -1);
    if (this.state === XQS || this.state === XQS_DASH || this.state === XQS_COMMENT) this.endLiteral(this.base);
    if (this.state === DQUOTE_Q) this.hazard(this.rules.literal(this.literal, "identifier", this.parenDepth), this.base);
    if (this.state === VAR) this.endVar(this.base);
    if (this.state !== COPY_DATA && this.state !== COPY_TAIL && this.text !== "") this.endStatement(this.base);
  }

  private find(kind: PsqlFindingKind, text: string, offset: number, line: number): void {
    this.findingCount++;
    if (this.findings.length < this.maxFindings) this.findings.push({ line, kind, text: text.slice(0, 160), offset });
    if (this.stopAtFirst) this.stopped = true;
  }

  private hazard(h: Hazard | null, offset: number): void {
    if (h === null) return;
    const start = this.text.length > 100 ? `${this.text.slice(0, 100)}…` : this.text;
    this.find(h.kind, `${h.why}: ${start}`, offset, this.line);
  }

  private addText(b: number): void {
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
  private startStatement(at: number, b: number): void {
    this.stmtStart = at;
    this.holding = b === 0x41 || b === 0x61;
  }

  private scan(chunk: Uint8Array, from: number, end: number): void {
    let i = from;
    while (i < end) {
      if (this.stopped) return;
      const b = chunk[i]!;
      const at = this.base + i;
      switch (this.state) {
        case INIT:
          if (b === NL) {
            this.addText(b);
            this.line++;
            this.lineStart = true;
            i++;
            continue;
          }
          if (isSpace(b)) {
            this.addText(b);
            this.lineStart = false;
            i++;
            continue;
          }
          if (b === BACKSLASH) {
            this.state = META;
            this.meta = "";
            this.metaStart = at;
            this.metaLine = this.line;
            this.metaAtLineStart = this.lineStart;
            break;
          }
          this.lineStart = false;
          if (this.text === "") this.startStatement(at, b);
          if (isIdentStart(b)) {
            this.state = IDENT;
            this.word = "";
            this.wordLen = 0;
            this.afterNumber = false;
            break;
          }
          if (b === 0x2d) this.state = DASH;
          else if (b === 0x2f) this.state = SLASH;
          else if (b === QUOTE_CHAR) this.startString(QUOTE, b);
          else if (b === DQUOTE_CHAR) {
            this.addText(b);
            this.state = DQUOTE;
            this.literal = "";
          } else if (b === DOLLAR) {
            this.addText(b);
            this.state = DOLLAR_OPEN;
            this.dollarTag = "";
          } else if (b === 0x3a) {
            this.addText(b);
            this.state = COLON;
          } else if (isDigit(b)) {
            this.addText(b);
            this.state = NUMBER;
          } else if (b === 0x3b) {
            this.addText(b);
            this.semicolon(at);
          } else {
            this.addText(b);
            if (b === 0x28) this.parenDepth++;
            else if (b === 0x29 && this.parenDepth > 0) this.parenDepth--;
            this.rules.punct(String.fromCharCode(b));
          }
          i++;
          continue;
        case DASH:
          if (b === 0x2d) {
            this.state = LINE_COMMENT;
            i++;
            continue;
          }
          this.addText(0x2d);
          this.rules.punct("-");
          this.state = INIT;
          continue;
        case SLASH:
          if (b === 0x2a) {
            this.state = BLOCK;
            this.blockDepth = 0;
            i++;
            continue;
          }
          this.addText(0x2f);
          this.rules.punct("/");
          this.state = INIT;
          continue;
        case LINE_COMMENT: {
          // psql's comment ends at "\n" or "\r" ({non_newline} is [^\n\r]).
          let j = i;
          while (j < end && chunk[j] !== NL && chunk[j] !== CR) j++;
          i = j;
          if (j < end) this.state = INIT;
          continue;
        }
        case BLOCK:
          if (b === 0x2a) this.state = BLOCK_STAR;
          else if (b === 0x2f) this.state = BLOCK_SLASH;
          else if (b === NL) this.line++;
          i++;
          continue;
        case BLOCK_STAR:
          if (b === 0x2f) {
            if (this.blockDepth === 0) {
              this.state = INIT;
              this.addText(0x20);
            } else {
              this.blockDepth--;
              this.state = BLOCK;
            }
            i++;
          } else if (b === 0x2a) i++;
          else this.state = BLOCK;
          continue;
        case BLOCK_SLASH:
          if (b === 0x2a) {
            this.blockDepth++;
            this.state = BLOCK;
            i++;
          } else this.state = BLOCK;
          continue;
        case QUOTE:
          if (!this.readsString) {
            // Nothing inside matters but its end and its lines (an INSERT's values, say).
            let j = i;
            let c = 0;
            while (j < end && (c = chunk[j]!) !== QUOTE_CHAR) {
              if (c === NL) this.line++;
              j++;
            }
            if (this.text.length < KEPT_TEXT) for (let k = i; k < j; k++) this.addText(chunk[k]!);
            i = j;
            if (j < end) {
              this.addText(QUOTE_CHAR);
              this.state = QUOTE_Q;
              i++;
            }
            continue;
          }
          this.addText(b);
          if (b === QUOTE_CHAR) this.state = QUOTE_Q;
          else this.stringByte(b, at);
          i++;
          continue;
        case EQUOTE:
          this.addText(b);
          if (b === QUOTE_CHAR) this.state = EQUOTE_Q;
          else if (b === BACKSLASH) {
            this.endBodyWord(at);
            this.state = EQUOTE_BS;
          } else this.stringByte(b, at);
          i++;
          continue;
        case EQUOTE_BS:
          // A backslash takes the next byte, whatever it is.
          this.addText(b);
          if (b === NL) this.line++;
          this.state = EQUOTE;
          i++;
          continue;
        case QUOTE_Q:
        case EQUOTE_Q:
          if (b === QUOTE_CHAR) {
            // '' inside the string
            this.addText(b);
            this.state = this.state === QUOTE_Q ? QUOTE : EQUOTE;
            i++;
            continue;
          }
          this.endBodyWord(at);
          this.state = XQS;
          this.xqsNewline = false;
          continue;
        case XQS:
          // After a closing quote: whitespace with a newline, then a quote, continues the string.
          if (b === 0x20 || b === 0x09 || b === 0x0c || (b === 0x0b && this.xqsNewline)) {
            i++;
            continue;
          }
          if (b === NL || b === CR) {
            if (b === NL) {
              this.line++;
              this.lineStart = true;
            }
            this.xqsNewline = true;
            i++;
            continue;
          }
          if (b === 0x2d) {
            this.state = XQS_DASH;
            i++;
            continue;
          }
          if (b === QUOTE_CHAR && this.xqsNewline) {
            this.lineStart = false;
            this.state = this.stringKind;
            i++;
            continue;
          }
          this.endLiteral(at);
          this.state = INIT;
          continue;
        case XQS_DASH:
          if (b === 0x2d) {
            this.state = XQS_COMMENT;
            i++;
            continue;
          }
          this.endLiteral(at);
          this.state = DASH;
          continue;
        case XQS_COMMENT:
          if (b === NL || b === CR) this.state = XQS;
          else i++;
          continue;
        case DQUOTE:
          this.addText(b);
          if (b === DQUOTE_CHAR) this.state = DQUOTE_Q;
          else {
            if (b === NL) this.line++;
            if (this.literal.length < LITERAL_MAX) this.literal += String.fromCharCode(b);
          }
          i++;
          continue;
        case DQUOTE_Q:
          if (b === DQUOTE_CHAR) {
            this.addText(b);
            this.state = DQUOTE;
            i++;
            continue;
          }
          this.hazard(this.rules.literal(this.literal, "identifier", this.parenDepth), at);
          this.state = INIT;
          continue;
        case DOLLAR_OPEN:
          if (b === DOLLAR) {
            this.addText(b);
            this.state = DOLLAR_BODY;
            this.bodyWord = "";
            this.bodyWordLen = 0;
            i++;
            continue;
          }
          if (this.dollarTag === "" && isDigit(b)) {
            // $1: a parameter, read as a number (a word right after it is psql-version dependent).
            this.state = NUMBER;
            continue;
          }
          if (this.dollarTag === "" ? isIdentStart(b) : isIdentCont(b)) {
            if (this.dollarTag.length >= DOLLAR_TAG_MAX) {
              this.find("ambiguous", "a dollar-quote tag longer than Berth reads", at, this.line);
              this.state = INIT;
              continue;
            }
            this.addText(b);
            this.dollarTag += String.fromCharCode(b);
            i++;
            continue;
          }
          // "$word" without its closing "$": psql reads the "$" alone, then the word.
          if (this.dollarTag === "") {
            this.rules.punct("$");
            this.state = INIT;
            continue;
          }
          this.word = this.dollarTag;
          this.wordLen = this.dollarTag.length;
          this.afterNumber = false;
          this.endWord(at, b);
          continue;
        case DOLLAR_BODY: {
          // The body is opaque to psql; only the words the rules look for are read.
          let j = i;
          while (j < end) {
            const c = chunk[j]!;
            if (c === DOLLAR) break;
            if (c === NL) this.line++;
            if (isWordChar(c)) {
              if (this.bodyWordLen < BODY_WORD_MAX) this.bodyWord += String.fromCharCode(c | (c >= 0x41 && c <= 0x5a ? 0x20 : 0));
              this.bodyWordLen++;
            } else if (this.bodyWordLen > 0) {
              this.endBodyWord(this.base + j);
              if (this.stopped) return;
            }
            if (this.text.length < KEPT_TEXT) this.addText(c);
            j++;
          }
          i = j;
          if (j < end) {
            this.endBodyWord(this.base + j);
            this.addText(DOLLAR);
            this.state = DOLLAR_CLOSE;
            this.closeLen = 0;
            this.closeMatches = true;
            i++;
          }
          continue;
        }
        case DOLLAR_CLOSE:
          if (b === DOLLAR) {
            this.addText(b);
            if (this.closeMatches && this.closeLen === this.dollarTag.length) {
              this.state = INIT;
              this.hazard(this.rules.literal("", "string", this.parenDepth), at);
            } else {
              // "$junk$": its last "$" may open the real end.
              this.closeLen = 0;
              this.closeMatches = true;
            }
            i++;
            continue;
          }
          if (this.closeLen === 0 ? isIdentStart(b) : isIdentCont(b)) {
            this.addText(b);
            if (this.closeLen >= this.dollarTag.length || this.dollarTag.charCodeAt(this.closeLen) !== b) this.closeMatches = false;
            this.closeLen++;
            i++;
            continue;
          }
          this.state = DOLLAR_BODY;
          continue;
        case IDENT:
          if (isIdentCont(b) || b === DOLLAR) {
            this.addText(b);
            if (this.wordLen < WORD_MAX) this.word += String.fromCharCode(b >= 0x41 && b <= 0x5a ? b | 0x20 : b);
            this.wordLen++;
            i++;
            continue;
          }
          if (this.endWord(at, b)) i++;
          continue;
        case U_AMP:
          if (b === QUOTE_CHAR) {
            this.startString(QUOTE, b);
            i++;
            continue;
          }
          if (b === DQUOTE_CHAR) {
            this.addText(b);
            this.state = DQUOTE;
            this.literal = "";
            i++;
            continue;
          }
          this.wordToken("u", at);
          this.rules.punct("&");
          this.addText(0x26);
          this.state = INIT;
          continue;
        case NUMBER:
          if (isDigit(b) || b === 0x5f || b === 0x2e) {
            this.addText(b);
            i++;
            continue;
          }
          if (isIdentStart(b)) {
            this.state = IDENT;
            this.word = "";
            this.wordLen = 0;
            this.afterNumber = true;
            continue;
          }
          this.rules.punct("0");
          this.state = INIT;
          continue;
        case COLON:
          if (b === 0x3a || b === 0x3d) {
            // "::" (a cast) or ":="
            this.addText(b);
            this.rules.punct(":");
            this.state = INIT;
            i++;
            continue;
          }
          if (isIdentCont(b)) {
            this.state = VAR;
            this.varName = "";
            continue;
          }
          if (b === QUOTE_CHAR || b === DQUOTE_CHAR) {
            this.addText(b);
            this.state = VAR_Q;
            this.varQuote = b;
            this.varName = "";
            i++;
            continue;
          }
          this.rules.punct(":");
          this.state = INIT;
          continue;
        case VAR:
          if (isIdentCont(b)) {
            this.addText(b);
            if (this.varName.length < WORD_MAX) this.varName += String.fromCharCode(b);
            i++;
            continue;
          }
          this.endVar(at);
          this.state = INIT;
          continue;
        case VAR_Q:
          if (isIdentCont(b)) {
            this.addText(b);
            if (this.varName.length < WORD_MAX) this.varName += String.fromCharCode(b);
            i++;
            continue;
          }
          if (b === this.varQuote && this.varName !== "") {
            // :'name' or :"name", one token for psql
            this.addText(b);
            this.endVar(at);
            this.state = INIT;
            i++;
            continue;
          }
          // Not a variable: psql reads the quote as a string's (or identifier's) start.
          if (this.varQuote === QUOTE_CHAR) {
            this.stringKind = QUOTE;
            this.literal = this.varName;
            this.state = QUOTE;
          } else {
            this.literal = this.varName;
            this.state = DQUOTE;
          }
          continue;
        case META:
          if (b === NL) {
            this.decideMeta(at);
            continue;
          }
          if (this.meta.length >= META_MAX) {
            this.decideMeta(at, false);
            continue;
          }
          this.meta += String.fromCharCode(b);
          i++;
          continue;
        case META_SKIP:
          if (b === NL) this.state = INIT;
          else i++;
          continue;
        case COPY_TAIL:
          if (b === NL) {
            this.line++;
            this.lineStart = true;
            this.state = COPY_DATA;
            this.copyState = C_START;
            i++;
            continue;
          }
          if (b === 0x20 || b === 0x09 || b === CR || b === 0x0c || b === 0x0b) {
            i++;
            continue;
          }
          this.find("ambiguous", "text after COPY ... FROM stdin; on its line, which psql reads after the data", at, this.line);
          this.state = INIT;
          continue;
        case COPY_DATA:
          i = this.copyData(chunk, i, end);
          continue;
        default:
          throw new Error(`psql-script: unknown state ${this.state}`);
      }
    }
  }

  /** COPY data: whole lines until one that is exactly "\." (or "\.\r"), as psql's handleCopyIn reads them. */
  private copyData(chunk: Uint8Array, i: number, end: number): number {
    while (i < end) {
      const b = chunk[i]!;
      switch (this.copyState) {
        case C_START:
          if (b === BACKSLASH) {
            this.copyState = C_BS;
            i++;
            continue;
          }
          this.copyState = C_MID;
          continue;
        case C_BS:
          if (b === 0x2e) {
            this.copyState = C_BS_DOT;
            i++;
            continue;
          }
          this.copyState = C_MID;
          continue;
        case C_BS_DOT:
          if (b === CR) {
            this.copyState = C_BS_DOT_CR;
            i++;
            continue;
          }
          if (b === NL) return this.endCopy(i);
          this.copyState = C_MID;
          continue;
        case C_BS_DOT_CR:
          if (b === NL) return this.endCopy(i);
          this.copyState = C_MID;
          continue;
        default: {
          const nl = chunk.indexOf(NL, i);
          if (nl < 0 || nl >= end) return end;
          this.line++;
          this.copyRows++;
          this.copyState = C_START;
          i = nl + 1;
        }
      }
    }
    return end;
  }

  private endCopy(nl: number): number {
    this.line++;
    this.lineStart = true;
    this.state = INIT;
    return nl + 1;
  }

  private startString(kind: number, quote: number): void {
    this.readsString = this.rules.readsBodies || this.rules.readsLiteral;
    this.addText(quote);
    this.stringKind = kind;
    this.state = kind;
    this.literal = "";
    this.bodyWord = "";
    this.bodyWordLen = 0;
  }

  /** A byte inside a quoted string: lines, the literal's start, words. */
  private stringByte(b: number, at: number): void {
    if (b === NL) this.line++;
    if (this.literal.length < LITERAL_MAX) this.literal += String.fromCharCode(b);
    if (isWordChar(b)) {
      if (this.bodyWordLen < BODY_WORD_MAX) this.bodyWord += String.fromCharCode(b >= 0x41 && b <= 0x5a ? b | 0x20 : b);
      this.bodyWordLen++;
    } else this.endBodyWord(at);
  }

  private endBodyWord(at: number): void {
    const len = this.bodyWordLen;
    const w = this.bodyWord;
    this.bodyWord = "";
    this.bodyWordLen = 0;
    if (len < BODY_WORD_MIN || len > BODY_WORD_MAX) return;
    this.hazard(this.rules.bodyWord(w), at);
  }

  private endLiteral(at: number): void {
    this.hazard(this.rules.literal(this.literal, "string", this.parenDepth), at);
  }

  /**
   * An identifier ends at byte `b` (-1: the dump's end). A lone e/E, b/B, x/X, n/N before a
   * quote opens a string (E'' with backslash escapes), u/U before "&" maybe one. Returns
   * whether `b` was taken.
   */
  private endWord(at: number, b: number): boolean {
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
  private wordToken(w: string, at: number): void {
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

  private endVar(at: number): void {
    if (PSQL_VARIABLE.test(this.varName)) this.find("psql_variable", `:${this.varName} (a psql variable) on line ${this.line}`, at, this.line);
    else this.rules.punct(":");
  }

  private decideMeta(at: number, wholeLine = true): void {
    const text = this.meta;
    if (wholeLine && this.metaAtLineStart && ALLOWED_META.test(text)) {
      this.allowedMeta.push({ start: this.metaStart, end: at });
      this.state = INIT;
      return;
    }
    this.find("meta_command", `${text.replace(/\r$/, "").slice(0, 80)} (a psql meta-command pg_dump does not write)`, this.metaStart, this.metaLine);
    this.state = META_SKIP;
  }

  private semicolon(at: number): void {
    if (this.parenDepth !== 0 || this.beginDepth !== 0) {
      this.rules.punct(";");
      return;
    }
    this.idCount = 0;
    this.endStatement(at);
  }

  private endStatement(at: number): void {
    this.hazard(this.rules.end(this.text, this.textWhole), at);
    if (this.holding && this.rules.ownerChange && !this.stopped) this.ownerChanges.push({ start: this.stmtStart, end: at + 1 });
    this.holding = false;
    const copyIn = this.rules.copyIn;
    this.rules.reset();
    this.text = "";
    this.textWhole = true;
    this.textSpace = false;
    if (copyIn && !this.stopped) this.state = COPY_TAIL;
  }
}
