// Which container image runs each ERP version (only major.minor selects it), and which
// PostgreSQL image backs it. Defaults are the official images; administrators override
// them per version (tests point them at locally built images).
import { ERP_VERSIONS, majorMinor } from "../projects/erp-versions.ts";
import { DomainError } from "../../lib/errors.ts";
import type { ErpImagesRepo } from "./erp-images.repo.ts";

export interface ImageMap {
  erp: Record<string, string>;
  db: string;
}

const DEFAULTS: ImageMap = {
  erp: Object.fromEntries(Object.keys(ERP_VERSIONS).map((v) => [v, `odoo:${v}`])),
  db: "postgres:16",
};

export function createErpImages(repo: ErpImagesRepo) {
  async function get(): Promise<ImageMap> {
    const saved = ((await repo.load()) ?? {}) as Partial<ImageMap>;
    return { erp: { ...DEFAULTS.erp, ...(saved.erp ?? {}) }, db: saved.db ?? DEFAULTS.db };
  }
  return {
    get,
    /** The ERP image for a version such as "17.0" or "17.0.1.3". */
    async imageFor(version: string | null): Promise<{ version: string; image: string; db: string }> {
      const map = await get();
      const mm = majorMinor(version ?? "17.0");
      const image = mm ? map.erp[mm] : undefined;
      if (!mm || !image) throw new DomainError("unsupported_erp_version", `No image is configured for ERP version ${version}`);
      return { version: mm, image, db: map.db };
    },
    async set(update: { erp?: Record<string, string>; db?: string }): Promise<ImageMap> {
      for (const v of Object.keys(update.erp ?? {})) {
        if (!(v in ERP_VERSIONS)) throw new DomainError("unsupported_erp_version", `ERP version ${v} is not supported`);
      }
      const current = await get();
      const next: ImageMap = { erp: { ...current.erp, ...(update.erp ?? {}) }, db: update.db ?? current.db };
      await repo.save(next);
      return next;
    },
  };
}
export type ErpImages = ReturnType<typeof createErpImages>;
