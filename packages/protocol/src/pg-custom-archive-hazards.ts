// What pg_restore would run of a custom-format dump (pg_dump -Fc), read by the plain dump's
// hazard rules (psql-script.ts): the one rule the control plane's analysis (which lists the
// hazards) and the agent (which refuses a dump with any, before pg_restore runs) both apply.
// Each TOC entry's texts are read each on its own: pg_restore sends each entry's SQL to the
// server by itself, so one entry's open quote never hides the next entry's statement.
import { PgCustomArchive, type PgArchiveHeader, type PgTocEntry } from "./pg-custom-archive.ts";
import { PsqlScript, type PsqlFinding } from "./psql-script.ts";

/**
 * The texts of an entry that pg_restore runs when Berth restores: the object's SQL and the COPY
 * before its rows. dropStmt runs only under --clean, and the owner becomes SQL only without
 * --no-owner; the agent restores with neither.
 */
export const RESTORED_TEXTS = ["defn", "copyStmt"] as const;

/** The hazards of an archive's TOC: the first `maxKept`, how many in all, and the bytes of SQL read. */
export interface PgArchiveHazards {
  header: PgArchiveHeader;
  hazards: PsqlFinding[];
  hazardCount: number;
  textBytes: number;
}

/**
 * Reads `archive`'s header (to `onHeader` before any entry) and every TOC entry (bounded by the
 * archive's limits), each entry to `onEntry` too, and scans what pg_restore would run of it; the archive is then at its data.
 * A finding's text names its entry ("FUNCTION pwn() (TOC entry 12): ...").
 */
export async function scanArchiveToc(
  archive: PgCustomArchive,
  options: { maxKept?: number; onHeader?: (header: PgArchiveHeader) => void; onEntry?: (entry: PgTocEntry) => void } = {},
): Promise<PgArchiveHazards> {
  const maxKept = options.maxKept ?? 20;
  const header = await archive.header();
  options.onHeader?.(header);
  const out: PgArchiveHazards = { header, hazards: [], hazardCount: 0, textBytes: 0 };
  for await (const entry of archive.entries()) {
    for (const field of RESTORED_TEXTS) {
      const text = entry[field];
      if (!text) continue;
      out.textBytes += Buffer.byteLength(text);
      const script = new PsqlScript({ maxFindings: maxKept });
      script.push(Buffer.from(text, "utf8"));
      script.end();
      out.hazardCount += script.findingCount;
      const where = `${entry.desc ?? "entry"} ${(entry.tag ?? "").slice(0, 60)} (TOC entry ${entry.dumpId})`;
      for (const f of script.findings) {
        if (out.hazards.length < maxKept) out.hazards.push({ ...f, text: `${where}: ${f.text}` });
      }
    }
    options.onEntry?.(entry);
  }
  return out;
}
