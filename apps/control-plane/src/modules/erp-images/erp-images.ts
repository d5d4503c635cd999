// Which container image runs each ERP version (only major.minor selects it), and which
// PostgreSQL image backs it. Defaults are the official images; administrators override
// them per version (tests point them at locally built images). Two facts about the images
// matter to a migration (migration-requirements.ts): the database image's PostgreSQL major
// (a dump restores only into a server at least as new as its pg_dump), read from the
// image's tag or declared with `db_major`; and which ERP images are Enterprise builds
// (`enterprise`: their versions), declared by the administrator since no tag says so.
import { ERP_VERSIONS, majorMinor } from "../projects/erp-versions.ts";
import { DomainError } from "../../lib/errors.ts";
import type { ErpImagesRepo } from "./erp-images.repo.ts";

export interface ImageMap {
  erp: Record<string, string>;
  db: string;
  /** The database image's PostgreSQL major when its tag does not start with it (e.g. a digest or `latest`); null: read from the tag. */
  db_major: number | null;
  /** ERP versions whose configured image is an Enterprise build (it carries the Enterprise add-ons). */
  enterprise: string[];
}

const DEFAULTS: ImageMap = {
  erp: Object.fromEntries(Object.keys(ERP_VERSIONS).map((v) => [v, `odoo:${v}`])),
  db: "postgres:16",
  db_major: null,
  enterprise: [],
};

/**
 * The PostgreSQL major an image reference names in its tag: `postgres:16`, `postgres:16.4-alpine`,
 * `registry.example.com/pg/postgres:17-bookworm@sha256:…` → 16, 16, 17; null when the tag
 * does not start with a major (`latest`, no tag, a digest alone).
 */
export function postgresMajorOfImage(image: string): number | null {
  const name = image.split("@")[0]!;
  const lastPart = name.slice(name.lastIndexOf("/") + 1);
  const colon = lastPart.lastIndexOf(":");
  if (colon < 0) return null;
  const m = /^(\d{1,2})(?:$|[.\-_])/.exec(lastPart.slice(colon + 1));
  return m ? Number(m[1]) : null;
}

function checkVersions(versions: string[]): void {
  for (const v of versions) {
    if (!(v in ERP_VERSIONS)) throw new DomainError("unsupported_erp_version", `ERP version ${v} is not supported`);
  }
}

export function createErpImages(repo: ErpImagesRepo) {
  async function get(): Promise<ImageMap> {
    const saved = ((await repo.load()) ?? {}) as Partial<ImageMap>;
    return {
      erp: { ...DEFAULTS.erp, ...(saved.erp ?? {}) },
      db: saved.db ?? DEFAULTS.db,
      db_major: saved.db_major ?? DEFAULTS.db_major,
      enterprise: saved.enterprise ?? DEFAULTS.enterprise,
    };
  }
  return {
    get,
    /**
     * The ERP image for a version such as "17.0" or "17.0.1.3", the database image, its
     * PostgreSQL major (declared, else from its tag; null when neither says) and whether the
     * ERP image is declared an Enterprise build.
     */
    async imageFor(version: string | null): Promise<{ version: string; image: string; db: string; db_major: number | null; enterprise: boolean }> {
      const map = await get();
      const mm = majorMinor(version ?? "17.0");
      const image = mm ? map.erp[mm] : undefined;
      if (!mm || !image) throw new DomainError("unsupported_erp_version", `No image is configured for ERP version ${version}`);
      return { version: mm, image, db: map.db, db_major: map.db_major ?? postgresMajorOfImage(map.db), enterprise: map.enterprise.includes(mm) };
    },
    /**
     * Changes what is given. A new `db` without `db_major` clears a declared major (it
     * described the old image); `enterprise` replaces the list.
     */
    async set(update: { erp?: Record<string, string>; db?: string; db_major?: number | null; enterprise?: string[] }): Promise<ImageMap> {
      checkVersions(Object.keys(update.erp ?? {}));
      checkVersions(update.enterprise ?? []);
      if (update.db_major != null && !(Number.isInteger(update.db_major) && update.db_major >= 9 && update.db_major <= 99)) {
        throw new DomainError("validation_error", `db_major ${update.db_major} is not a PostgreSQL major version`);
      }
      const current = await get();
      const next: ImageMap = {
        erp: { ...current.erp, ...(update.erp ?? {}) },
        db: update.db ?? current.db,
        db_major: update.db_major !== undefined ? update.db_major : update.db !== undefined ? null : current.db_major,
        enterprise: update.enterprise ? [...new Set(update.enterprise)].sort() : current.enterprise,
      };
      await repo.save(next);
      return next;
    },
  };
}
export type ErpImages = ReturnType<typeof createErpImages>;
