// The psql script reader's dispatch: each lexer state's function reads from where the last one
// stopped (psql-script-sql.ts, psql-script-quoted.ts, psql-script-lines.ts), and what psql does
// with the state left at the dump's end.
import * as L from "./psql-script-lexer.ts";
import { decideMeta, scanCopyData, scanCopyTail, scanMeta, scanMetaSkip } from "./psql-script-lines.ts";
import {
  scanAfterString,
  scanAfterStringComment,
  scanAfterStringDash,
  scanBlock,
  scanBlockSlash,
  scanBlockStar,
  scanDollarBody,
  scanDollarClose,
  scanDQuote,
  scanDQuoteQuote,
  scanEQuoteBackslash,
  scanLineComment,
  scanQuoteQuote,
  scanString,
} from "./psql-script-quoted.ts";
import { scanColon, scanDashOrSlash, scanDollarOpen, scanIdent, scanInit, scanNumber, scanUAmp, scanVar, scanVarQuoted } from "./psql-script-sql.ts";

/** States whose bytes are all the statement's text (the others' are not: comments, psql's own lines, ...). */
const TEXT_STATES: ReadonlySet<number> = new Set([
  L.INIT, L.IDENT, L.NUMBER, L.QUOTE, L.QUOTE_Q, L.EQUOTE, L.EQUOTE_BS, L.EQUOTE_Q, L.DQUOTE, L.DQUOTE_Q,
  L.DOLLAR_OPEN, L.DOLLAR_BODY, L.DOLLAR_CLOSE, L.COLON, L.VAR, L.VAR_Q,
]);

/** Reads chunk[from, end) (no NUL in it). */
export function scan(lx: L.Lexer, chunk: Uint8Array, from: number, end: number): void {
  lx.text.begin(chunk, TEXT_STATES.has(lx.state) ? from : -1);
  lx.nextNl = -1;
  let i = from;
  while (i < end && !lx.stopped) i = step(lx, chunk, i, end);
  lx.text.close(end);
  lx.foldBodyWord(chunk);
}

function step(lx: L.Lexer, chunk: Uint8Array, i: number, end: number): number {
  switch (lx.state) {
    case L.INIT:
      return scanInit(lx, chunk, i, end);
    case L.QUOTE:
    case L.EQUOTE:
      return scanString(lx, chunk, i, end);
    case L.QUOTE_Q:
    case L.EQUOTE_Q:
      return scanQuoteQuote(lx, chunk, i);
    case L.COPY_DATA:
      return scanCopyData(lx, chunk, i, end);
    case L.DASH:
    case L.SLASH:
      return scanDashOrSlash(lx, chunk, i);
    case L.LINE_COMMENT:
      return scanLineComment(lx, chunk, i, end);
    case L.BLOCK:
      return scanBlock(lx, chunk, i, end);
    case L.BLOCK_STAR:
      return scanBlockStar(lx, chunk, i);
    case L.BLOCK_SLASH:
      return scanBlockSlash(lx, chunk, i);
    case L.EQUOTE_BS:
      return scanEQuoteBackslash(lx, chunk, i);
    case L.XQS:
      return scanAfterString(lx, chunk, i);
    case L.XQS_DASH:
      return scanAfterStringDash(lx, chunk, i);
    case L.XQS_COMMENT:
      return scanAfterStringComment(lx, chunk, i, end);
    case L.DQUOTE:
      return scanDQuote(lx, chunk, i, end);
    case L.DQUOTE_Q:
      return scanDQuoteQuote(lx, chunk, i);
    case L.DOLLAR_OPEN:
      return scanDollarOpen(lx, chunk, i);
    case L.DOLLAR_BODY:
      return scanDollarBody(lx, chunk, i, end);
    case L.DOLLAR_CLOSE:
      return scanDollarClose(lx, chunk, i);
    case L.IDENT:
      return scanIdent(lx, chunk, i, end);
    case L.U_AMP:
      return scanUAmp(lx, chunk, i);
    case L.NUMBER:
      return scanNumber(lx, chunk, i, end);
    case L.COLON:
      return scanColon(lx, chunk, i);
    case L.VAR:
      return scanVar(lx, chunk, i);
    case L.VAR_Q:
      return scanVarQuoted(lx, chunk, i);
    case L.META:
      return scanMeta(lx, chunk, i, end);
    case L.META_SKIP:
      return scanMetaSkip(lx, chunk, i, end);
    case L.COPY_TAIL:
      return scanCopyTail(lx, chunk, i);
    default:
      throw new Error(`psql-script: unknown state ${lx.state}`);
  }
}

/** At the end of the dump: what psql does with what is left (it sends an unfinished statement). */
export function finish(lx: L.Lexer): void {
  if (lx.stopped) return;
  const at = lx.base;
  if (lx.state === L.META) decideMeta(lx, at, -1);
  if (lx.state === L.IDENT) lx.endWord(at, -1, 0);
  if (lx.state === L.XQS || lx.state === L.XQS_DASH || lx.state === L.XQS_COMMENT) lx.endLiteral(at, 0);
  if (lx.state === L.DQUOTE_Q) lx.hazard(lx.rules.literal(lx.literal, "identifier", lx.parenDepth), at, 0);
  if (lx.state === L.VAR) lx.endVar(at);
  if (lx.state !== L.COPY_DATA && lx.state !== L.COPY_TAIL && lx.started) lx.endStatement(at, 0);
}
