// Which member of an ERP backup archive is its database dump. The control plane's analysis
// (which reads the dump and shows the customer what it found) and the agent's restore (which
// loads it) both decide with these, so the dump restored is the dump that was analysed.

/** A member name as both sides compare it: forward slashes, without a leading "./". */
export function normalizeMemberName(name: string): string {
  return name.replaceAll("\\", "/").replace(/^(\.\/)+/, "");
}

/**
 * How good a candidate for the dump a member is (by its normalized name), lower first; null
 * for a member that is not one. A dump is a *.sql or *.dump at the top or under one folder,
 * outside filestore/: Odoo's own dump.sql at the top first, then a dump.sql under a folder,
 * then any other at the top, then any other under a folder. A zip's dump is its best-ranked
 * member (the earliest of equals); a tar is read as a stream, so its dump is its first
 * member with a rank.
 */
export function dumpMemberRank(name: string): number | null {
  const parts = name.split("/").filter(Boolean);
  if (parts.length === 0 || parts.length > 2 || parts[0] === "filestore") return null;
  const base = parts[parts.length - 1]!;
  if (!/\.(sql|dump)$/i.test(base)) return null;
  if (parts.length === 1) return base === "dump.sql" ? 0 : 2;
  return base === "dump.sql" ? 1 : 3;
}

/** The dump among a zip's member names (normalized), or null: its best-ranked, the earliest of equals. */
export function zipDumpMember(names: readonly string[]): string | null {
  let best: string | null = null;
  let bestRank = Infinity;
  for (const name of names) {
    const rank = dumpMemberRank(name);
    if (rank !== null && rank < bestRank) {
      best = name;
      bestRank = rank;
    }
  }
  return best;
}
