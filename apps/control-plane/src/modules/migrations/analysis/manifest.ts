// manifest.json of the vendor's zip backups (ERP-FACTS.md): db_name, version, pg_version,
// modules. Read leniently: a missing or odd field is left out, never trusted further.

export interface BackupManifest {
  db_name: string | null;
  version: string | null;
  pg_version: string | null;
  modules: string[];
}

/** The largest manifest read; real ones are tens of KB. */
export const MAX_MANIFEST_BYTES = 4 << 20;

/** The manifest's useful fields, or null when the text is not a JSON object. */
export function parseManifest(text: string): BackupManifest | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return null;
  const o = raw as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === "string" && v.trim() !== "" ? v.trim() : typeof v === "number" ? String(v) : null);
  const modules = typeof o.modules === "object" && o.modules !== null && !Array.isArray(o.modules) ? Object.keys(o.modules) : [];
  return { db_name: str(o.db_name), version: str(o.version), pg_version: str(o.pg_version), modules };
}
