// What psql reads itself rather than sending to the server, line by line: a meta-command (a
// backslash outside strings and comments, to its line's end) and COPY ... FROM stdin data
// (whole lines until one that is exactly "\."), as psql's handleCopyIn reads them.
import { BACKSLASH, CR, latin1, NL } from "./psql-script-bytes.ts";
import { COPY_DATA, INIT, META_SKIP, type Lexer } from "./psql-script-lexer.ts";

/** pg_dump's own meta-commands (pg_dump 17.6, 16.10, 15.14, 14.19, 13.22 and later), alone on their line. */
const ALLOWED_META = /^\\(?:restrict|unrestrict) [A-Za-z0-9]+\r?$/;
/** A meta-command's line is read up to this many bytes to decide. */
const META_MAX = 256;

// COPY data, per line: at its start, after "\", after "\.", after "\.\r", inside it.
const C_START = 0;
const C_BS = 1;
const C_BS_DOT = 2;
const C_BS_DOT_CR = 3;
const C_MID = 4;

/** A meta-command's line, up to its end or META_MAX bytes. */
export function scanMeta(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  if (chunk[i] === NL) {
    decideMeta(lx, lx.base + i, i);
    return i;
  }
  if (lx.meta.length >= META_MAX) {
    decideMeta(lx, lx.base + i, -1, false);
    return i;
  }
  const limit = Math.min(end, i + META_MAX - lx.meta.length);
  let j = i;
  while (j < limit && chunk[j] !== NL) j++;
  lx.meta += latin1(chunk, i, j);
  return j;
}

/** A refused meta-command's line: not read. */
export function scanMetaSkip(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  let j = i;
  while (j < end && chunk[j] !== NL) j++;
  if (j < end) {
    lx.state = INIT;
    lx.text.resume(j);
  }
  return j;
}

/** The meta-command read so far ends at `at` (its line's end at chunk index `i`, or the dump's: -1). */
export function decideMeta(lx: Lexer, at: number, i: number, wholeLine = true): void {
  const text = lx.meta;
  if (wholeLine && lx.metaAtLineStart && ALLOWED_META.test(text)) {
    lx.out.allowedMeta.push({ start: lx.metaStart, end: at });
    lx.state = INIT;
    if (i >= 0) lx.text.resume(i);
    return;
  }
  lx.find("meta_command", `${text.replace(/\r$/, "").slice(0, 80)} (a psql meta-command pg_dump does not write)`, lx.metaStart, lx.metaLine);
  lx.state = META_SKIP;
}

/** The rest of a COPY ... FROM stdin; line: only whitespace, then the data. */
export function scanCopyTail(lx: Lexer, chunk: Uint8Array, i: number): number {
  const b = chunk[i]!;
  if (b === NL) {
    lx.line++;
    lx.lineStart = true;
    lx.state = COPY_DATA;
    lx.copyState = C_START;
    return i + 1;
  }
  if (b === 0x20 || b === 0x09 || b === CR || b === 0x0c || b === 0x0b) return i + 1;
  lx.find("ambiguous", "text after COPY ... FROM stdin; on its line, which psql reads after the data", lx.base + i, lx.line);
  lx.state = INIT;
  lx.text.resume(i);
  return i;
}

/** COPY data: whole lines until one that is exactly "\." (or "\.\r"), as psql's handleCopyIn reads them. */
export function scanCopyData(lx: Lexer, chunk: Uint8Array, i: number, end: number): number {
  while (i < end) {
    const b = chunk[i]!;
    switch (lx.copyState) {
      case C_START:
        if (b === BACKSLASH) {
          lx.copyState = C_BS;
          i++;
          continue;
        }
        lx.copyState = C_MID;
        continue;
      case C_BS:
        if (b === 0x2e) {
          lx.copyState = C_BS_DOT;
          i++;
          continue;
        }
        lx.copyState = C_MID;
        continue;
      case C_BS_DOT:
        if (b === CR) {
          lx.copyState = C_BS_DOT_CR;
          i++;
          continue;
        }
        if (b === NL) return endCopy(lx, i);
        lx.copyState = C_MID;
        continue;
      case C_BS_DOT_CR:
        if (b === NL) return endCopy(lx, i);
        lx.copyState = C_MID;
        continue;
      default: {
        const nl = chunk.indexOf(NL, i);
        if (nl < 0 || nl >= end) return end;
        lx.line++;
        lx.out.copyRows++;
        lx.copyState = C_START;
        i = nl + 1;
      }
    }
  }
  return end;
}

function endCopy(lx: Lexer, nl: number): number {
  lx.line++;
  lx.lineStart = true;
  lx.state = INIT;
  lx.text.resume(nl + 1);
  return nl + 1;
}
