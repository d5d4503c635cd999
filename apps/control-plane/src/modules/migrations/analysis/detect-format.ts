// What a file is, from its first bytes (never from its name).

export type DetectedKind = "zip" | "gzip" | "tar" | "pg_custom" | "sql" | "unknown";

/** How many leading bytes detectFormat wants. */
export const HEAD_BYTES = 1024;

/** The kind of file whose first bytes are `head`. */
export function detectFormat(head: Buffer): DetectedKind {
  if (head.length >= 4 && head[0] === 0x50 && head[1] === 0x4b && (head[2] === 3 || head[2] === 5 || head[2] === 7) && head[3] === head[2] + 1) return "zip";
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  if (head.length >= 262 && head.toString("latin1", 257, 262) === "ustar") return "tar";
  if (head.toString("latin1", 0, 5) === "PGDMP") return "pg_custom";
  if (looksLikeSql(head)) return "sql";
  return "unknown";
}

/** Text without NUL bytes that starts the way pg_dump's plain output (or hand-written SQL) does. */
export function looksLikeSql(head: Buffer): boolean {
  if (head.length === 0 || head.includes(0)) return false;
  const text = head.toString("utf8").replace(/^\uFEFF/, "");
  if (text.includes("PostgreSQL database dump")) return true;
  return /^\s*(--|\\restrict |SET |SELECT |CREATE |BEGIN;)/.test(text);
}
