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
  scanEQuote,
  scanEQuoteBackslash,
  scanLineComment,
  scanQuote,
  scanQuoteQuote,
} from "./psql-script-quoted.ts";
import { scanColon, scanDash, scanDollarOpen, scanIdent, scanInit, scanNumber, scanSlash, scanUAmp, scanVar, scanVarQuoted } from "./psql-script-sql.ts";

/** Reads chunk[from, end) (no NUL in it). */
export function scan(lx: L.Lexer, chunk: Uint8Array, from: number, end: number): void {
  let i = from;
  while (i < end && !lx.stopped) i = step(lx, chunk, i, end);
}

function step(lx: L.Lexer, chunk: Uint8Array, i: number, end: number): number {
  switch (lx.state) {
    case L.INIT:
      return scanInit(lx, chunk, i);
    case L.DASH:
      return scanDash(lx, chunk, i);
    case L.SLASH:
      return scanSlash(lx, chunk, i);
    case L.LINE_COMMENT:
      return scanLineComment(lx, chunk, i, end);
    case L.BLOCK:
      return scanBlock(lx, chunk, i);
    case L.BLOCK_STAR:
      return scanBlockStar(lx, chunk, i);
    case L.BLOCK_SLASH:
      return scanBlockSlash(lx, chunk, i);
    case L.QUOTE:
      return scanQuote(lx, chunk, i, end);
    case L.EQUOTE:
      return scanEQuote(lx, chunk, i);
    case L.EQUOTE_BS:
      return scanEQuoteBackslash(lx, chunk, i);
    case L.QUOTE_Q:
    case L.EQUOTE_Q:
      return scanQuoteQuote(lx, chunk, i);
    case L.XQS:
      return scanAfterString(lx, chunk, i);
    case L.XQS_DASH:
      return scanAfterStringDash(lx, chunk, i);
    case L.XQS_COMMENT:
      return scanAfterStringComment(lx, chunk, i);
    case L.DQUOTE:
      return scanDQuote(lx, chunk, i);
    case L.DQUOTE_Q:
      return scanDQuoteQuote(lx, chunk, i);
    case L.DOLLAR_OPEN:
      return scanDollarOpen(lx, chunk, i);
    case L.DOLLAR_BODY:
      return scanDollarBody(lx, chunk, i, end);
    case L.DOLLAR_CLOSE:
      return scanDollarClose(lx, chunk, i);
    case L.IDENT:
      return scanIdent(lx, chunk, i);
    case L.U_AMP:
      return scanUAmp(lx, chunk, i);
    case L.NUMBER:
      return scanNumber(lx, chunk, i);
    case L.COLON:
      return scanColon(lx, chunk, i);
    case L.VAR:
      return scanVar(lx, chunk, i);
    case L.VAR_Q:
      return scanVarQuoted(lx, chunk, i);
    case L.META:
      return scanMeta(lx, chunk, i);
    case L.META_SKIP:
      return scanMetaSkip(lx, chunk, i);
    case L.COPY_TAIL:
      return scanCopyTail(lx, chunk, i);
    case L.COPY_DATA:
      return scanCopyData(lx, chunk, i, end);
    default:
      throw new Error(`psql-script: unknown state ${lx.state}`);
  }
}

/** At the end of the dump: what psql does with what is left (it sends an unfinished statement). */
export function finish(lx: L.Lexer): void {
  if (lx.stopped) return;
  const at = lx.base;
  if (lx.state === L.META) decideMeta(lx, at);
  if (lx.state === L.IDENT) lx.endWord(at, -1);
  if (lx.state === L.XQS || lx.state === L.XQS_DASH || lx.state === L.XQS_COMMENT) lx.endLiteral(at);
  if (lx.state === L.DQUOTE_Q) lx.hazard(lx.rules.literal(lx.literal, "identifier", lx.parenDepth), at);
  if (lx.state === L.VAR) lx.endVar(at);
  if (lx.state !== L.COPY_DATA && lx.state !== L.COPY_TAIL && lx.text !== "") lx.endStatement(at);
}
