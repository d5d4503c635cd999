// Bytes as psql's lexer (psqlscan.l) classes them, for the psql script reader (psql-script.ts),
// as tables so that the reader skips runs of ordinary bytes in a tight loop.

export const NL = 0x0a;
export const CR = 0x0d;
export const BACKSLASH = 0x5c;
export const QUOTE_CHAR = 0x27;
export const DQUOTE_CHAR = 0x22;
export const DOLLAR = 0x24;

export const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === NL || b === CR || b === 0x0c || b === 0x0b;
export const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
/** [A-Za-z\200-\377_] */
export const isIdentStart = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || b === 0x5f || b >= 0x80;
/** [A-Za-z\200-\377_0-9] (an identifier also takes "$") */
export const isIdentCont = (b: number) => isIdentStart(b) || isDigit(b);
/** A word inside a string or body, as the hazard words are spelled. */
const isWordChar = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || b === 0x5f || isDigit(b);

// What a byte is between tokens (CLASS): the rest of the bytes are psql's own (- / ' " $ : ; \).
export const SPACE = 1;
export const WORD = 2;
export const DIGIT = 3;
export const PUNCT = 4;
const table = (f: (b: number) => number) => Uint8Array.from({ length: 256 }, (_, b) => f(b));
export const CLASS = table((b) => (isSpace(b) ? SPACE : isIdentStart(b) ? WORD : isDigit(b) ? DIGIT : "-/'\"$:;\\".includes(String.fromCharCode(b)) ? 0 : PUNCT));
/** 1 for a byte that goes on an identifier ([A-Za-z\200-\377_0-9$]). */
export const IDENT_CHAR = table((b) => (isIdentCont(b) || b === DOLLAR ? 1 : 0));
/** 1 for a byte of a word inside a string or body. */
export const WORD_CHAR = table((b) => (isWordChar(b) ? 1 : 0));
/** 1 for a byte that goes on a number (digits, "_" and "."). */
export const NUMBER_CHAR = table((b) => (isDigit(b) || b === 0x5f || b === 0x2e ? 1 : 0));
/** ASCII letters lowered, as SQL folds an unquoted identifier (other bytes as they are). */
export const LOWER = table((b) => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b));
/** Each byte as a one-character string (latin1). */
export const CHARS: readonly string[] = Array.from({ length: 256 }, (_, b) => String.fromCharCode(b));

/** chunk[s, e) as latin1 text. */
export function latin1(chunk: Uint8Array, s: number, e: number): string {
  return e - s === 1 ? CHARS[chunk[s]!]! : String.fromCharCode.apply(null, chunk.subarray(s, e) as unknown as number[]);
}

const SLOTS = 4096;
/** Words seen lately, by a hash of their bytes: a dump names the same few hundred words over and over. */
const seen: string[] = new Array<string>(SLOTS).fill("");

/** The hash lowerWord() files a word under: h = h * 31 + LOWER[byte], from 0, over its bytes. */
export const hashStep = (h: number, b: number) => (Math.imul(h, 31) + LOWER[b]!) | 0;

/** chunk[s, e) lowered (LOWER), as one string, without making a new one for a word seen lately. */
export function lowerWord(chunk: Uint8Array, s: number, e: number, hash?: number): string {
  let h = hash ?? 0;
  if (hash === undefined) for (let k = s; k < e; k++) h = hashStep(h, chunk[k]!);
  const slot = (h ^ (h >>> 13)) & (SLOTS - 1);
  const w = seen[slot]!;
  const n = e - s;
  if (w.length === n) {
    let k = 0;
    while (k < n && w.charCodeAt(k) === LOWER[chunk[s + k]!]) k++;
    if (k === n) return w;
  }
  let fresh = "";
  for (let k = s; k < e; k++) fresh += CHARS[LOWER[chunk[k]!]!]!;
  seen[slot] = fresh;
  return fresh;
}

/** Bytes looked at one by one before asking indexOf (a call that pays off only over longer runs). */
const SHORT = 64;

/** Where the first byte `b` is in chunk[i, end) (end when none). */
export function findByte(chunk: Uint8Array, b: number, i: number, end: number): number {
  const stop = Math.min(end, i + SHORT);
  while (i < stop && chunk[i] !== b) i++;
  if (i < stop || i === end) return i;
  const j = chunk.indexOf(b, i);
  return j < 0 || j > end ? end : j;
}
