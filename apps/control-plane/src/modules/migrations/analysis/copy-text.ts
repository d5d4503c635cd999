// PostgreSQL's COPY text format as pg_dump writes it: one row per line, columns separated by
// tabs, \N for NULL, and backslash escapes (\\ \t \n \r \b \f \v, octal \NNN, hex \xHH).

const SIMPLE: Record<string, string> = { b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" };

/** One field's text with its escapes resolved. */
export function unescapeCopyField(raw: string): string {
  if (!raw.includes("\\")) return raw;
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== "\\" || i === raw.length - 1) {
      out += c;
      continue;
    }
    const n = raw[++i]!;
    if (n in SIMPLE) out += SIMPLE[n];
    else if (n >= "0" && n <= "7") {
      let digits = n;
      while (digits.length < 3 && raw[i + 1] !== undefined && raw[i + 1]! >= "0" && raw[i + 1]! <= "7") digits += raw[++i];
      out += String.fromCharCode(parseInt(digits, 8));
    } else if (n === "x" && /^[0-9a-fA-F]/.test(raw[i + 1] ?? "")) {
      let digits = raw[++i]!;
      if (/^[0-9a-fA-F]/.test(raw[i + 1] ?? "")) digits += raw[++i];
      out += String.fromCharCode(parseInt(digits, 16));
    } else out += n; // \\ and any other escaped character stand for themselves
  }
  return out;
}

/** A data line of a COPY block (without its newline) as fields; \N is null. */
export function splitCopyRow(line: string): (string | null)[] {
  // A raw tab never occurs inside a field (it is written \t), so splitting first is safe.
  return line.split("\t").map((f) => (f === "\\N" ? null : unescapeCopyField(f)));
}

/**
 * The table and column names of a `COPY public.t (a, "b c") FROM stdin;` line, or null.
 * Quoted identifiers keep their case and may hold commas or doubled quotes.
 */
export function parseCopyHeader(line: string): { table: string; columns: string[] } | null {
  const m = /^COPY\s+((?:"(?:[^"]|"")+"|[^\s(.]+)(?:\.(?:"(?:[^"]|"")+"|[^\s(]+))?)\s*\((.*)\)\s+FROM\s+stdin;\s*$/i.exec(line);
  if (!m) return null;
  const parts = splitIdentifiers(m[1]!, ".");
  const columns = splitIdentifiers(m[2]!, ",").map((c) => c.trim());
  return { table: parts.at(-1)!, columns };
}

function splitIdentifiers(text: string, separator: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      if (quoted && text[i + 1] === '"') {
        current += '"';
        i++;
      } else quoted = !quoted;
    } else if (c === separator && !quoted) {
      out.push(current.trim());
      current = "";
    } else if (quoted || c !== " ") current += c;
  }
  out.push(current.trim());
  return out;
}
