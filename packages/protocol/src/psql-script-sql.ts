// Plain SQL between strings and comments, as psqlscan.l reads it: words, numbers, punctuation,
// psql variables (:name, :'name'), the start of a dollar quote, and the statement's end.
// Each function reads the lexer state its name says from chunk[i] and returns where it stopped.
// scanInit reads whole runs of plain tokens itself (a word, a number, punctuation, whitespace
// are bytes of the statement's text as they are: nothing is copied but the words).
import { BACKSLASH, CHARS, CLASS, CR, DIGIT, DOLLAR, DQUOTE_CHAR, hashStep, IDENT_CHAR, isDigit, isIdentCont, isIdentStart, lowerWord, NL, NUMBER_CHAR, PUNCT, QUOTE_CHAR, SPACE, WORD } from "./psql-script-bytes.ts";
import {
  BLOCK,
  COLON,
  DASH,
  DOLLAR_BODY,
  DOLLAR_OPEN,
  DQUOTE,
  EQUOTE,
  IDENT,
  INIT,
  LINE_COMMENT,
  META,
  NUMBER,
  QUOTE,
  SLASH,
  U_AMP,
  VAR,
  VAR_Q,
  WORD_MAX,
  type Lexer,
} from "./psql-script-lexer.ts";
import { scanString } from "./psql-script-quoted.ts";

const DOLLAR_TAG_MAX = 1024;

/** Between tokens: plain tokens are read here; anything else moves to its state. */
export function scanInit(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  const rules = lx.rules;
  while (i < end) {
    const b = chunk[i]!;
    const kind = CLASS[b];
    if (kind === SPACE) {
      if (b === NL) {
        lx.line++;
        lx.lineStart = true;
      } else lx.lineStart = false;
      i++;
      continue;
    }
    if (b === BACKSLASH) {
      lx.text.stop(i);
      lx.state = META;
      lx.meta = "";
      lx.metaStart = lx.base + i;
      lx.metaLine = lx.line;
      lx.metaAtLineStart = lx.lineStart;
      return i;
    }
    lx.lineStart = false;
    if (!lx.started) lx.startStatement(lx.base + i, b);
    if (kind === WORD) {
      lx.started = true;
      i = readWord(lx, chunk, i, end, false);
    } else if (kind === PUNCT) {
      lx.started = true;
      if (b === 0x28) lx.parenDepth++;
      else if (b === 0x29 && lx.parenDepth > 0) lx.parenDepth--;
      rules.punct();
      i++;
    } else if (kind === DIGIT) {
      lx.started = true;
      i = readNumber(lx, chunk, i + 1, end);
    } else if (b === 0x2d || b === 0x2f) {
      i = dashOrSlash(lx, chunk, i, end, b);
    } else {
      lx.started = true;
      i++;
      if (b === QUOTE_CHAR) {
        lx.startString(QUOTE);
        i = scanString(lx, chunk, i, end);
      } else if (b === DQUOTE_CHAR) {
        lx.state = DQUOTE;
        lx.literal = "";
      } else if (b === DOLLAR) {
        lx.state = DOLLAR_OPEN;
        lx.dollarTag = "";
      } else if (b === 0x3a) lx.state = COLON;
      else lx.semicolon(lx.base + i - 1, i);
    }
    if (lx.state !== INIT || lx.stopped) return i;
  }
  return i;
}

/** "-" or "/" at chunk[i]: a comment's start, or an operator. */
function dashOrSlash(lx: Lexer, chunk: Uint8Array, i: number, end: number, b: number): number {
  if (i + 1 === end) {
    // The next chunk says which (DASH, SLASH).
    lx.text.stop(i);
    lx.state = b === 0x2d ? DASH : SLASH;
    return end;
  }
  const next = chunk[i + 1];
  if (b === 0x2d && next === 0x2d) {
    // psql's comment ends at "\n" or "\r" ({non_newline} is [^\n\r]).
    lx.text.stop(i);
    let j = i + 2;
    while (j < end && chunk[j] !== NL && chunk[j] !== CR) j++;
    if (j === end) lx.state = LINE_COMMENT;
    else lx.text.resume(j);
    return j;
  }
  if (b === 0x2f && next === 0x2a) {
    lx.text.stop(i);
    lx.state = BLOCK;
    lx.blockDepth = 0;
    return i + 2;
  }
  lx.started = true;
  lx.rules.punct();
  return i + 1;
}

/** After "-" or "/" at a chunk's end: a comment's start, or an operator. */
export function scanDashOrSlash(lx: Lexer, chunk: Uint8Array, i: number): number {
  const slash = lx.state === SLASH;
  if (chunk[i] === (slash ? 0x2a : 0x2d)) {
    lx.state = slash ? BLOCK : LINE_COMMENT;
    lx.blockDepth = 0;
    return i + 1;
  }
  lx.text.add(slash ? 0x2f : 0x2d);
  lx.started = true;
  lx.text.resume(i);
  lx.rules.punct();
  lx.state = INIT;
  return i;
}

/** A word starting at chunk[i] (right after a number: `afterNumber`). */
function readWord(lx: Lexer, chunk: Uint8Array, i: number, end: number, afterNumber: boolean): number {
  let h = hashStep(0, chunk[i]!);
  let j = i + 1;
  for (let c = 0; j < end && IDENT_CHAR[(c = chunk[j]!)] === 1; j++) h = hashStep(h, c);
  lx.word = j - i <= WORD_MAX ? lowerWord(chunk, i, j, h) : lowerWord(chunk, i, i + WORD_MAX);
  lx.wordLen = j - i;
  lx.afterNumber = afterNumber;
  if (j === end) {
    lx.state = IDENT;
    return end;
  }
  return endWordAt(lx, chunk, j);
}

/** The word ends at chunk[j], which it may take (a string's quote, U&'s "&"). */
function endWordAt(lx: Lexer, chunk: Uint8Array, j: number): number {
  if (!lx.endWord(lx.base + j, chunk[j]!, j)) return j;
  if (lx.state === U_AMP) lx.text.stop(j);
  return j + 1;
}

/** A word that went on from the last chunk. */
export function scanIdent(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end && IDENT_CHAR[chunk[j]!] === 1) j++;
  if (lx.wordLen < WORD_MAX) lx.word += lowerWord(chunk, i, Math.min(j, i + WORD_MAX - lx.wordLen));
  lx.wordLen += j - i;
  return j === end ? end : endWordAt(lx, chunk, j);
}

/** A number's bytes from chunk[i] on; a word right after it is read as psql releases differ. */
function readNumber(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end && NUMBER_CHAR[chunk[j]!] === 1) j++;
  if (j === end) {
    lx.state = NUMBER;
    return end;
  }
  if (CLASS[chunk[j]!] === WORD) return readWord(lx, chunk, j, end, true);
  lx.rules.punct();
  lx.state = INIT;
  return j;
}

export function scanNumber(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  return readNumber(lx, chunk, i, end);
}

/** U& before a quote: a Unicode string (or identifier); before anything else, "u" and "&". */
export function scanUAmp(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === QUOTE_CHAR || b === DQUOTE_CHAR) {
    lx.text.add(b);
    lx.text.resume(i + 1);
    if (b === QUOTE_CHAR) lx.startString(QUOTE);
    else {
      lx.state = DQUOTE;
      lx.literal = "";
    }
    return i + 1;
  }
  lx.wordToken("u", lx.base + i, i);
  lx.rules.punct();
  lx.text.add(0x26);
  lx.text.resume(i);
  lx.state = INIT;
  return i;
}

/** After ":": a cast, ":=", or a psql variable. */
export function scanColon(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x3a || b === 0x3d) {
    // "::" (a cast) or ":="
    lx.rules.punct();
    lx.state = INIT;
    return i + 1;
  }
  if (isIdentCont(b)) {
    lx.state = VAR;
    lx.varName = "";
    return i;
  }
  if (b === QUOTE_CHAR || b === DQUOTE_CHAR) {
    lx.state = VAR_Q;
    lx.varQuote = b;
    lx.varName = "";
    return i + 1;
  }
  lx.rules.punct();
  lx.state = INIT;
  return i;
}

export function scanVar(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (isIdentCont(b)) {
    if (lx.varName.length < WORD_MAX) lx.varName += CHARS[b]!;
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
    if (lx.varName.length < WORD_MAX) lx.varName += CHARS[b]!;
    return i + 1;
  }
  if (b === lx.varQuote && lx.varName !== "") {
    // :'name' or :"name", one token for psql
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
    lx.state = DOLLAR_BODY;
    lx.bodyWordLen = 0;
    lx.bodyWord = "";
    lx.bodySeg = -1;
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
    lx.dollarTag += CHARS[b]!;
    return i + 1;
  }
  // "$word" without its closing "$": psql reads the "$" alone, then the word.
  if (lx.dollarTag === "") {
    lx.rules.punct();
    lx.state = INIT;
    return i;
  }
  lx.word = lx.dollarTag;
  lx.wordLen = lx.dollarTag.length;
  lx.afterNumber = false;
  if (lx.endWord(at, b, i)) {
    // The quote (or "&") is read again in the state endWord chose: a string's quote is in the
    // statement's text twice then, as the first version of this reader had it.
    if (lx.state === U_AMP) lx.text.stop(i);
    else if (lx.state === QUOTE || lx.state === EQUOTE) {
      lx.text.take(i);
      lx.text.add(b);
    }
  }
  return i;
}
