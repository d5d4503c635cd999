// Text psql passes to the server whole: comments (-- to the line's end, nested /* */), quoted
// strings ('' and E'' with backslash escapes, and a string continued on a later line),
// quoted identifiers and dollar-quoted bodies. Nothing inside them is a meta-command or ends a
// statement; only their lines, their first bytes (StatementRules.literal) and the words the
// rules look for in bodies (StatementRules.bodyWord) are read.
import { BACKSLASH, CR, DOLLAR, DQUOTE_CHAR, isIdentCont, isIdentStart, isWordChar, NL, QUOTE_CHAR } from "./psql-script-bytes.ts";
import { BODY_WORD_MAX, KEPT_TEXT } from "./psql-script-hazards.ts";
import {
  BLOCK,
  BLOCK_SLASH,
  BLOCK_STAR,
  DASH,
  DOLLAR_BODY,
  DOLLAR_CLOSE,
  DQUOTE,
  DQUOTE_Q,
  EQUOTE,
  EQUOTE_BS,
  EQUOTE_Q,
  INIT,
  LITERAL_MAX,
  QUOTE,
  QUOTE_Q,
  XQS,
  XQS_COMMENT,
  XQS_DASH,
  type Lexer,
} from "./psql-script-lexer.ts";

export function scanLineComment(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  // psql's comment ends at "\n" or "\r" ({non_newline} is [^\n\r]).
  let j = i;
  while (j < end && chunk[j] !== NL && chunk[j] !== CR) j++;
  if (j < end) lx.state = INIT;
  return j;
}

export function scanBlock(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x2a) lx.state = BLOCK_STAR;
  else if (b === 0x2f) lx.state = BLOCK_SLASH;
  else if (b === NL) lx.line++;
  return i + 1;
}

export function scanBlockStar(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x2f) {
    if (lx.blockDepth === 0) {
      lx.state = INIT;
      lx.addText(0x20);
    } else {
      lx.blockDepth--;
      lx.state = BLOCK;
    }
    return i + 1;
  }
  if (b === 0x2a) return i + 1;
  lx.state = BLOCK;
  return i;
}

export function scanBlockSlash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === 0x2a) {
    lx.blockDepth++;
    lx.state = BLOCK;
    return i + 1;
  }
  lx.state = BLOCK;
  return i;
}

export function scanQuote(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  if (!lx.readsString) {
    // Nothing inside matters but its end and its lines (an INSERT's values, say).
    let j = i;
    let c = 0;
    while (j < end && (c = chunk[j]!) !== QUOTE_CHAR) {
      if (c === NL) lx.line++;
      j++;
    }
    if (lx.text.length < KEPT_TEXT) for (let k = i; k < j; k++) lx.addText(chunk[k]!);
    if (j < end) {
      lx.addText(QUOTE_CHAR);
      lx.state = QUOTE_Q;
      return j + 1;
    }
    return j;
  }
  const b = chunk[i]!;
  lx.addText(b);
  if (b === QUOTE_CHAR) lx.state = QUOTE_Q;
  else stringByte(lx, b, lx.base + i);
  return i + 1;
}

export function scanEQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  lx.addText(b);
  if (b === QUOTE_CHAR) lx.state = EQUOTE_Q;
  else if (b === BACKSLASH) {
    lx.endBodyWord(lx.base + i);
    lx.state = EQUOTE_BS;
  } else stringByte(lx, b, lx.base + i);
  return i + 1;
}

/** A backslash takes the next byte, whatever it is. */
export function scanEQuoteBackslash(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  lx.addText(b);
  if (b === NL) lx.line++;
  lx.state = EQUOTE;
  return i + 1;
}

/** After a quote inside a string: '' (a quote), or the string's end. */
export function scanQuoteQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === QUOTE_CHAR) {
    lx.addText(b);
    lx.state = lx.state === QUOTE_Q ? QUOTE : EQUOTE;
    return i + 1;
  }
  lx.endBodyWord(lx.base + i);
  lx.state = XQS;
  lx.xqsNewline = false;
  return i;
}

/** After a closing quote: whitespace with a newline, then a quote, continues the string. */
export function scanAfterString(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x20 || b === 0x09 || b === 0x0c || (b === 0x0b && lx.xqsNewline)) return i + 1;
  if (b === NL || b === CR) {
    if (b === NL) {
      lx.line++;
      lx.lineStart = true;
    }
    lx.xqsNewline = true;
    return i + 1;
  }
  if (b === 0x2d) {
    lx.state = XQS_DASH;
    return i + 1;
  }
  if (b === QUOTE_CHAR && lx.xqsNewline) {
    lx.lineStart = false;
    lx.state = lx.stringKind;
    return i + 1;
  }
  lx.endLiteral(lx.base + i);
  lx.state = INIT;
  return i;
}

export function scanAfterStringDash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === 0x2d) {
    lx.state = XQS_COMMENT;
    return i + 1;
  }
  lx.endLiteral(lx.base + i);
  lx.state = DASH;
  return i;
}

export function scanAfterStringComment(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === NL || b === CR) {
    lx.state = XQS;
    return i;
  }
  return i + 1;
}

export function scanDQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  lx.addText(b);
  if (b === DQUOTE_CHAR) lx.state = DQUOTE_Q;
  else {
    if (b === NL) lx.line++;
    if (lx.literal.length < LITERAL_MAX) lx.literal += String.fromCharCode(b);
  }
  return i + 1;
}

export function scanDQuoteQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === DQUOTE_CHAR) {
    lx.addText(b);
    lx.state = DQUOTE;
    return i + 1;
  }
  lx.hazard(lx.rules.literal(lx.literal, "identifier", lx.parenDepth), lx.base + i);
  lx.state = INIT;
  return i;
}

/** The body is opaque to psql; only the words the rules look for are read. */
export function scanDollarBody(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end) {
    const c = chunk[j]!;
    if (c === DOLLAR) break;
    if (c === NL) lx.line++;
    if (isWordChar(c)) {
      if (lx.bodyWordLen < BODY_WORD_MAX) lx.bodyWord += String.fromCharCode(c | (c >= 0x41 && c <= 0x5a ? 0x20 : 0));
      lx.bodyWordLen++;
    } else if (lx.bodyWordLen > 0) {
      lx.endBodyWord(lx.base + j);
      if (lx.stopped) return j;
    }
    if (lx.text.length < KEPT_TEXT) lx.addText(c);
    j++;
  }
  if (j < end) {
    lx.endBodyWord(lx.base + j);
    lx.addText(DOLLAR);
    lx.state = DOLLAR_CLOSE;
    lx.closeLen = 0;
    lx.closeMatches = true;
    return j + 1;
  }
  return j;
}

/** After a "$" in a body: the closing tag, or more body. */
export function scanDollarClose(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === DOLLAR) {
    lx.addText(b);
    if (lx.closeMatches && lx.closeLen === lx.dollarTag.length) {
      lx.state = INIT;
      lx.hazard(lx.rules.literal("", "string", lx.parenDepth), lx.base + i);
    } else {
      // "$junk$": its last "$" may open the real end.
      lx.closeLen = 0;
      lx.closeMatches = true;
    }
    return i + 1;
  }
  if (lx.closeLen === 0 ? isIdentStart(b) : isIdentCont(b)) {
    lx.addText(b);
    if (lx.closeLen >= lx.dollarTag.length || lx.dollarTag.charCodeAt(lx.closeLen) !== b) lx.closeMatches = false;
    lx.closeLen++;
    return i + 1;
  }
  lx.state = DOLLAR_BODY;
  return i;
}

/** A byte inside a quoted string: lines, the literal's start, words. */
function stringByte(lx: Lexer, b: number, at: number): void {
  if (b === NL) lx.line++;
  if (lx.literal.length < LITERAL_MAX) lx.literal += String.fromCharCode(b);
  if (isWordChar(b)) {
    if (lx.bodyWordLen < BODY_WORD_MAX) lx.bodyWord += String.fromCharCode(b >= 0x41 && b <= 0x5a ? b | 0x20 : b);
    lx.bodyWordLen++;
  } else lx.endBodyWord(at);
}
