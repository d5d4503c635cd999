// Bytes as psql's lexer (psqlscan.l) classes them, for the psql script reader (psql-script.ts).

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
export const isWordChar = (b: number) => (b >= 0x61 && b <= 0x7a) || (b >= 0x41 && b <= 0x5a) || b === 0x5f || isDigit(b);
/** ASCII letters lowered, as SQL folds an unquoted identifier. */
export const lowerByte = (b: number) => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b);
