// The bounds of one analysis, named once here: whatever the archive holds, the analysis reads a
// bounded number of members, inflates a bounded number of bytes, and keeps a bounded record.
// A 29 MB zip of 300,000 `../x` members once made an 18 MB analysis record (one warning per
// member, stored and served); now like warnings are one line with their count, the record
// keeps at most MAX_WARNINGS of them and says how many it left out (warnings_omitted), and an
// archive past maxMembers is refused (archive_too_many_members) before its members are read.

/** Limits against zip and gzip bombs and against archives of countless members. */
export interface InflateLimits {
  /** Largest uncompressed size accepted for one member read. */
  maxMemberBytes: number;
  /** Largest uncompressed/compressed ratio accepted for a member read (deflate tops out near 1032). */
  maxRatio: number;
  /**
   * Most entries an archive may hold (zip central directory entries, tar headers: files,
   * folders and links alike). The largest file stores seen hold a few hundred thousand files.
   */
  maxMembers: number;
}

export const DEFAULT_INFLATE_LIMITS: InflateLimits = { maxMemberBytes: 512 * 1024 ** 3, maxRatio: 200, maxMembers: 1_000_000 };

/**
 * Most installed modules an analysis lists, and the longest name it keeps: a real database has
 * a few hundred to about two thousand modules with short names; a dump of a million rows, or
 * of names megabytes long, would otherwise make a record of that size. The rest are counted.
 */
export const MAX_MODULES = 5_000;
export const MAX_MODULE_NAME_BYTES = 256;

/** Adds an installed module to `into` within the bounds above; false when it was left out. */
export function keepModule(into: Map<string, string | null>, name: string, license: string | null): boolean {
  if (Buffer.byteLength(name) > MAX_MODULE_NAME_BYTES || (into.size >= MAX_MODULES && !into.has(name))) return false;
  into.set(name, license);
  return true;
}

/** Most warnings an analysis record keeps; the rest are counted in warnings_omitted. */
export const MAX_WARNINGS = 50;

/**
 * Warnings as an analysis collects them, in bounded memory: `note` collapses warnings of one
 * kind (an unsafe member name, one per member) into one line with their count and the first
 * example; `add` keeps a warning of its own. `list` gives them in the order first seen.
 */
export class Warnings {
  private readonly lines: ({ text: string } | { kind: string; count: number; one: string; many: (count: number) => string })[] = [];
  private readonly kinds = new Map<string, { count: number }>();
  private omitted = 0;

  add(text: string): void {
    if (this.lines.length >= MAX_WARNINGS) this.omitted++;
    else this.lines.push({ text });
  }

  /** One more of `kind`: shown as `one` while it is the only one, else as `many(count)`. */
  note(kind: string, one: string, many: (count: number) => string): void {
    const seen = this.kinds.get(kind);
    if (seen) {
      seen.count++;
      return;
    }
    if (this.lines.length >= MAX_WARNINGS) {
      this.omitted++;
      return;
    }
    const line = { kind, count: 1, one, many };
    this.kinds.set(kind, line);
    this.lines.push(line);
  }

  /** Warnings left out past MAX_WARNINGS (a collapsed kind counts once). */
  get omittedCount(): number {
    return this.omitted;
  }

  list(): string[] {
    return this.lines.map((l) => ("text" in l ? l.text : l.count === 1 ? l.one : l.many(l.count)));
  }
}

/** At most MAX_WARNINGS warnings, and how many were left out (`omitted`: left out before). */
export function boundedWarnings(warnings: readonly string[], omitted = 0): { warnings: string[]; warnings_omitted: number } {
  return { warnings: warnings.slice(0, MAX_WARNINGS), warnings_omitted: omitted + Math.max(0, warnings.length - MAX_WARNINGS) };
}
