// Text psql passes to the server whole: comments (-- to the line's end, nested /* */), quoted
// strings ('' and E'' with backslash escapes, and a string continued on a later line),
// quoted identifiers and dollar-quoted bodies. Nothing inside them is a meta-command or ends a
// statement; only their lines, their first bytes (StatementRules.literal) and the words the
// rules look for in bodies (StatementRules.bodyWord) are read, a run of bytes at a time.
import { BACKSLASH, CR, DOLLAR, DQUOTE_CHAR, findByte, isIdentCont, isIdentStart, latin1, NL, QUOTE_CHAR, WORD_CHAR } from "./psql-script-bytes.ts";
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
  if (j < end) {
    lx.state = INIT;
    lx.text.resume(j);
  }
  return j;
}

/** A block comment (nested): "*" and "/" may start its end or an inner one. */
export function scanBlock(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end && lx.state === BLOCK) {
    const b = chunk[j++]!;
    if (b === 0x2a) lx.state = BLOCK_STAR;
    else if (b === 0x2f) lx.state = BLOCK_SLASH;
    else if (b === NL) lx.line++;
  }
  return j;
}

export function scanBlockStar(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === 0x2f) {
    if (lx.blockDepth === 0) {
      lx.state = INIT;
      lx.text.add(0x20);
      lx.text.resume(i + 1);
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

/** Inside '' or E'': to the quote (or the backslash) that ends the run. */
export function scanString(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  const escapes = lx.state === EQUOTE;
  let j = i;
  if (!lx.readsString && !escapes) {
    // Nothing inside matters but its end and its lines (an INSERT's values, say).
    // One look at each byte for a short string; indexOf for the rest of a long one.
    const stop = Math.min(end, i + 64);
    for (let c = 0; j < stop && (c = chunk[j]!) !== QUOTE_CHAR; j++) if (c === NL) lx.line++;
    if (j === stop && j < end) {
      const k = findByte(chunk, QUOTE_CHAR, j, end);
      lx.countLines(chunk, j, k);
      j = k;
    }
  } else if (!lx.readsString) {
    for (let c = 0; j < end && (c = chunk[j]!) !== QUOTE_CHAR && c !== BACKSLASH; j++) if (c === NL) lx.line++;
  } else {
    while (j < end) {
      const c = chunk[j]!;
      if (c === QUOTE_CHAR || (escapes && c === BACKSLASH)) break;
      if (WORD_CHAR[c] === 1) {
        const s = j;
        while (++j < end && WORD_CHAR[chunk[j]!] === 1);
        lx.bodyWordRun(chunk, s, j);
        continue;
      }
      if (c === NL) lx.line++;
      lx.endBodyWord(chunk, lx.base + j, j + 1);
      if (lx.stopped) return j;
      j++;
    }
    if (lx.literal.length < LITERAL_MAX) lx.literal += latin1(chunk, i, Math.min(j, i + LITERAL_MAX - lx.literal.length));
  }
  if (j === end) return end;
  if (chunk[j] === BACKSLASH) {
    lx.endBodyWord(chunk, lx.base + j, j + 1);
    lx.state = EQUOTE_BS;
    return j + 1;
  }
  // The closing quote (or the first of ''): what follows it says which.
  const k = j + 1;
  const next = k < end ? chunk[k]! : QUOTE_CHAR;
  if (next === QUOTE_CHAR || next === 0x20 || next === 0x09 || next === 0x0c || next === NL || next === CR || next === 0x2d) {
    lx.state = escapes ? EQUOTE_Q : QUOTE_Q;
    return k;
  }
  // Neither '' nor a continuation on a later line: the string ends (QUOTE_Q, then XQS).
  lx.endBodyWord(chunk, lx.base + k, k);
  if (lx.stopped) return k;
  lx.endLiteral(lx.base + k, k);
  lx.state = INIT;
  return k;
}

/** A backslash takes the next byte, whatever it is. */
export function scanEQuoteBackslash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === NL) lx.line++;
  lx.state = EQUOTE;
  return i + 1;
}

/** After a quote inside a string: '' (a quote), or the string's end. */
export function scanQuoteQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === QUOTE_CHAR) {
    lx.state = lx.state === QUOTE_Q ? QUOTE : EQUOTE;
    return i + 1;
  }
  lx.endBodyWord(chunk, lx.base + i, i);
  lx.state = XQS;
  lx.xqsNewline = false;
  lx.text.stop(i);
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
    lx.text.resume(i + 1);
    return i + 1;
  }
  lx.endLiteral(lx.base + i, i);
  lx.state = INIT;
  lx.text.resume(i);
  return i;
}

export function scanAfterStringDash(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === 0x2d) {
    lx.state = XQS_COMMENT;
    return i + 1;
  }
  lx.endLiteral(lx.base + i, i);
  lx.state = DASH;
  return i;
}

export function scanAfterStringComment(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end && chunk[j] !== NL && chunk[j] !== CR) j++;
  if (j < end) lx.state = XQS;
  return j;
}

/** A quoted identifier, to its closing quote. */
export function scanDQuote(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  const j = findByte(chunk, DQUOTE_CHAR, i, end);
  lx.countLines(chunk, i, j);
  if (lx.literal.length < LITERAL_MAX) lx.literal += latin1(chunk, i, Math.min(j, i + LITERAL_MAX - lx.literal.length));
  if (j === end) return end;
  lx.state = DQUOTE_Q;
  return j + 1;
}

export function scanDQuoteQuote(lx: Lexer, chunk: Uint8Array, i: number): number {
  if (chunk[i] === DQUOTE_CHAR) {
    lx.state = DQUOTE;
    return i + 1;
  }
  lx.hazard(lx.rules.literal(lx.literal, "identifier", lx.parenDepth), lx.base + i, i);
  lx.state = INIT;
  return i;
}

/** The body is opaque to psql; only the words the rules look for are read. */
export function scanDollarBody(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end) {
    const c = chunk[j]!;
    if (c === DOLLAR) break;
    if (WORD_CHAR[c] === 1) {
      const s = j;
      while (++j < end && WORD_CHAR[chunk[j]!] === 1);
      lx.bodyWordRun(chunk, s, j);
      continue;
    }
    if (c === NL) lx.line++;
    lx.endBodyWord(chunk, lx.base + j, j);
    if (lx.stopped) return j;
    j++;
  }
  if (j === end) return end;
  lx.endBodyWord(chunk, lx.base + j, j);
  lx.state = DOLLAR_CLOSE;
  lx.closeLen = 0;
  lx.closeMatches = true;
  return j + 1;
}

/** After a "$" in a body: the closing tag, or more body. */
export function scanDollarClose(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === DOLLAR) {
    if (lx.closeMatches && lx.closeLen === lx.dollarTag.length) {
      lx.state = INIT;
      lx.hazard(lx.rules.literal("", "string", lx.parenDepth), lx.base + i, i + 1);
    } else {
      // "$junk$": its last "$" may open the real end.
      lx.closeLen = 0;
      lx.closeMatches = true;
    }
    return i + 1;
  }
  if (lx.closeLen === 0 ? isIdentStart(b) : isIdentCont(b)) {
    if (lx.closeLen >= lx.dollarTag.length || lx.dollarTag.charCodeAt(lx.closeLen) !== b) lx.closeMatches = false;
    lx.closeLen++;
    return i + 1;
  }
  lx.state = DOLLAR_BODY;
  return i;
}
