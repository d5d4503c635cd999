// Plain SQL between strings and comments, as psqlscan.l reads it: words, numbers, punctuation,
// psql variables (:name, :'name'), the start of a dollar quote, and the statement's end.
// Each function reads the lexer state its name says from chunk[i] and returns where it stopped.
import { BACKSLASH, DOLLAR, DQUOTE_CHAR, isDigit, isIdentCont, isIdentStart, isSpace, NL, QUOTE_CHAR } from "./psql-script-bytes.ts";
import { BLOCK, COLON, DASH, DOLLAR_BODY, DOLLAR_OPEN, DQUOTE, IDENT, INIT, LINE_COMMENT, META, NUMBER, QUOTE, SLASH, VAR, VAR_Q, WORD_MAX, type Lexer } from "./psql-script-lexer.ts";

const DOLLAR_TAG_MAX = 1024;

export function scanInit(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  const at = lx.base + i;
  if (b === NL) {
    lx.addText(b);
    lx.line++;
    lx.lineStart = true;
    return i + 1;
  }
  if (isSpace(b)) {
    lx.addText(b);
    lx.lineStart = false;
    return i + 1;
  }
  if (b === BACKSLASH) {
    lx.state = META;
    lx.meta = "";
    lx.metaStart = at;
    lx.metaLine = lx.line;
    lx.metaAtLineStart = lx.lineStart;
    return i;
  }
  lx.lineStart = false;
  if (lx.text === "") lx.startStatement(at, b);
  if (isIdentStart(b)) {
    lx.state = IDENT;
    lx.word = "";
    lx.wordLen = 0;
    lx.afterNumber = false;
    return i;
  }
  if (b === 0x2d) lx.state = DASH;
  else if (b === 0x2f) lx.state = SLASH;
  else if (b === QUOTE_CHAR) lx.startString(QUOTE, b);
  else if (b === DQUOTE_CHAR) {
    lx.addText(b);
    lx.state = DQUOTE;
    lx.literal = "";
  } else if (b === DOLLAR) {
    lx.addText(b);
    lx.state = DOLLAR_OPEN;
    lx.dollarTag = "";
  } else if (b === 0x3a) {
    lx.addText(b);
    lx.state = COLON;
  } else if (isDigit(b)) {
    lx.addText(b);
    lx.state = NUMBER;
  } else if (b === 0x3b) {
    lx.addText(b);
    lx.semicolon(at);
  } else {
    lx.addText(b);
    if (b === 0x28) lx.parenDepth++;
    else if (b === 0x29 && lx.parenDepth > 0) lx.parenDepth--;
    lx.rules.punct(String.fromCharCode(b));
  }
  return i + 1;
}

/** After "-": a comment's start, or a minus. */
export function scanDash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === 0x2d) {
    lx.state = LINE_COMMENT;
    return i + 1;
  }
  lx.addText(0x2d);
  lx.rules.punct("-");
  lx.state = INIT;
  return i;
}

/** After "/": a comment's start, or a division. */
export function scanSlash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === 0x2a) {
    lx.state = BLOCK;
    lx.blockDepth = 0;
    return i + 1;
  }
  lx.addText(0x2f);
  lx.rules.punct("/");
  lx.state = INIT;
  return i;
}

export function scanIdent(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (isIdentCont(b) || b === DOLLAR) {
    lx.addText(b);
    if (lx.wordLen < WORD_MAX) lx.word += String.fromCharCode(b >= 0x41 && b <= 0x5a ? b | 0x20 : b);
    lx.wordLen++;
    return i + 1;
  }
  return lx.endWord(lx.base + i, b) ? i + 1 : i;
}

/** U& before a quote: a Unicode string (or identifier); before anything else, "u" and "&". */
export function scanUAmp(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === QUOTE_CHAR) {
    lx.startString(QUOTE, b);
    return i + 1;
  }
  if (b === DQUOTE_CHAR) {
    lx.addText(b);
    lx.state = DQUOTE;
    lx.literal = "";
    return i + 1;
  }
  lx.wordToken("u", lx.base + i);
  lx.rules.punct("&");
  lx.addText(0x26);
  lx.state = INIT;
  return i;
}

export function scanNumber(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (isDigit(b) || b === 0x5f || b === 0x2e) {
    lx.addText(b);
    return i + 1;
  }
  if (isIdentStart(b)) {
    lx.state = IDENT;
    lx.word = "";
    lx.wordLen = 0;
    lx.afterNumber = true;
    return i;
  }
  lx.rules.punct("0");
  lx.state = INIT;
  return i;
}

/** After ":": a cast, ":=", or a psql variable. */
export function scanColon(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x3a || b === 0x3d) {
    // "::" (a cast) or ":="
    lx.addText(b);
    lx.rules.punct(":");
    lx.state = INIT;
    return i + 1;
  }
  if (isIdentCont(b)) {
    lx.state = VAR;
    lx.varName = "";
    return i;
  }
  if (b === QUOTE_CHAR || b === DQUOTE_CHAR) {
    lx.addText(b);
    lx.state = VAR_Q;
    lx.varQuote = b;
    lx.varName = "";
    return i + 1;
  }
  lx.rules.punct(":");
  lx.state = INIT;
  return i;
}

export function scanVar(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (isIdentCont(b)) {
    lx.addText(b);
    if (lx.varName.length < WORD_MAX) lx.varName += String.fromCharCode(b);
    return i + 1;
  }
  lx.endVar(lx.base + i);
  lx.state = INIT;
  return i;
}

/** :'name' or :"name". */
export function scanVarQuoted(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (isIdentCont(b)) {
    lx.addText(b);
    if (lx.varName.length < WORD_MAX) lx.varName += String.fromCharCode(b);
    return i + 1;
  }
  if (b === lx.varQuote && lx.varName !== "") {
    // :'name' or :"name", one token for psql
    lx.addText(b);
    lx.endVar(lx.base + i);
    lx.state = INIT;
    return i + 1;
  }
  // Not a variable: psql reads the quote as a string's (or identifier's) start.
  if (lx.varQuote === QUOTE_CHAR) {
    lx.stringKind = QUOTE;
    lx.literal = lx.varName;
    lx.state = QUOTE;
  } else {
    lx.literal = lx.varName;
    lx.state = DQUOTE;
  }
  return i;
}

/** After "$": a dollar quote's tag, a parameter ($1), or a lone "$". */
export function scanDollarOpen(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  const at = lx.base + i;
  if (b === DOLLAR) {
    lx.addText(b);
    lx.state = DOLLAR_BODY;
    lx.bodyWord = "";
    lx.bodyWordLen = 0;
    return i + 1;
  }
  if (lx.dollarTag === "" && isDigit(b)) {
    // $1: a parameter, read as a number (a word right after it is psql-version dependent).
    lx.state = NUMBER;
    return i;
  }
  if (lx.dollarTag === "" ? isIdentStart(b) : isIdentCont(b)) {
    if (lx.dollarTag.length >= DOLLAR_TAG_MAX) {
      lx.find("ambiguous", "a dollar-quote tag longer than Berth reads", at, lx.line);
      lx.state = INIT;
      return i;
    }
    lx.addText(b);
    lx.dollarTag += String.fromCharCode(b);
    return i + 1;
  }
  // "$word" without its closing "$": psql reads the "$" alone, then the word.
  if (lx.dollarTag === "") {
    lx.rules.punct("$");
    lx.state = INIT;
    return i;
  }
  lx.word = lx.dollarTag;
  lx.wordLen = lx.dollarTag.length;
  lx.afterNumber = false;
  lx.endWord(at, b);
  return i;
}
