// What the environment a migration creates must have for its backup to restore and run,
// compared with the target as it is now (GET analysis lists them, start refuses while one is
// not met, with the requirement's code):
//
// - database_image_too_old: the database image's PostgreSQL major (erp-images.ts: declared,
//   or read from its tag) must be at least the analysis' postgres_major_required. A dump
//   restores into the same or a newer PostgreSQL, never an older one (pg_dump 17 writes
//   `SET transaction_timeout = 0;`, which 16 rejects, and the restore carries on without the
//   rest of that statement's effects). An image whose major is unknown does not meet it: the
//   administrator declares it (erp-images `db_major`).
// - enterprise_addons_required (only for a backup with Enterprise modules): the ERP image is
//   declared an Enterprise build (erp-images `enterprise`), or an add-on repository the
//   environment will get (the platform's, its organisation's, or its own once it exists) is
//   the vendor's Enterprise repository. The rule: the last part of the repository's path,
//   without `.git`, is `enterprise` (git@github.com:odoo/enterprise.git, a mirror
//   https://git.example.com/vendor/enterprise), on the branch of the backup's ERP version
//   (17.0) or a branch not named after a version (a mirror's own). Without them the ERP logs
//   "Some modules are not loaded" and serves a broken interface while its health check passes.
// - dump_unsafe (only for a dump with hazards): the dump holds what the agent refuses to load
//   (analysis dump_hazards: psql meta-commands, server-side programs, files, roles). Nothing
//   the target can have meets it: the backup must be made again by pg_dump or the ERP.
import { DomainError } from "../../../lib/errors.ts";
import type { AddonRepositoriesRepo, AddonRepositoryRow } from "../../addon-repositories/addon-repositories.repo.ts";
import type { ErpImages } from "../../erp-images/erp-images.ts";
import type { AnalysisFields, Requirement } from "../record/migration-schemas.ts";

/** The part of a migration the requirements are read from. */
export interface RequirementSubject {
  organizationId: string;
  /** The environment a started migration made (a retry reuses it); null before. */
  environmentId: string | null;
  analysis: AnalysisFields;
}

/** Whether an add-on repository is the vendor's Enterprise repository for `erpVersion` (the rule above). */
export function isEnterpriseRepository(repo: { gitUrl: string; branch: string }, erpVersion: string): boolean {
  const path = repo.gitUrl.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]+/i, "").replace(/^[^@/:]+@[^:]+:/, "");
  const last = path.replace(/\/+$/, "").replace(/\.git$/i, "").split(/[/:]/).pop() ?? "";
  if (last.toLowerCase() !== "enterprise") return false;
  return repo.branch === erpVersion || !/^(saas-)?\d+\.\d+$/.test(repo.branch);
}

const ENTERPRISE_ADVICE =
  "add the vendor's Enterprise repository (e.g. git@github.com:odoo/enterprise.git) on branch {version} as an add-on repository of the organisation (POST /api/v1/organizations/{organization_id}/addon-repositories) or of the platform, or have the administrator declare the ERP image of {version} an Enterprise build; then start again";

export function createMigrationRequirements(deps: { images: Pick<ErpImages, "imageFor">; addonRepositories: Pick<AddonRepositoriesRepo, "list"> }) {
  async function repositoriesFor(s: RequirementSubject): Promise<AddonRepositoryRow[]> {
    const { organizationId, environmentId } = s;
    const lists = await Promise.all([
      deps.addonRepositories.list({ level: "platform" }),
      deps.addonRepositories.list({ level: "organization", organizationId }),
      environmentId === null ? [] : deps.addonRepositories.list({ level: "environment", organizationId, environmentId }),
    ]);
    return lists.flat();
  }

  async function enterprise(s: RequirementSubject, imageIsEnterprise: boolean): Promise<Requirement | null> {
    const modules = s.analysis.enterprise_modules ?? [];
    if (modules.length === 0) return null;
    const version = s.analysis.erp_version;
    const named = `${modules.length} Enterprise module${modules.length === 1 ? "" : "s"} (${modules.slice(0, 5).join(", ")}${modules.length > 5 ? ", …" : ""})`;
    if (imageIsEnterprise) return { code: "enterprise_addons_required", met: true, message: `The backup uses ${named}: the ERP image of ${version} is declared an Enterprise build` };
    const repos = await repositoriesFor(s);
    const found = repos.find((r) => isEnterpriseRepository(r, version));
    if (found) return { code: "enterprise_addons_required", met: true, message: `The backup uses ${named}: the add-on repository ${found.name} (${found.gitUrl}, branch ${found.branch}) provides them` };
    const otherBranch = repos.find((r) => isEnterpriseRepository({ gitUrl: r.gitUrl, branch: "" }, version));
    const advice = ENTERPRISE_ADVICE.replaceAll("{version}", version).replace("{organization_id}", s.organizationId);
    return {
      code: "enterprise_addons_required",
      met: false,
      message: `The backup uses ${named}, which exist only in the ERP's Enterprise add-ons: without them the migrated ERP starts with a broken interface. ${otherBranch ? `The add-on repository ${otherBranch.name} is on branch ${otherBranch.branch}, not ${version}. ` : ""}To migrate it, ${advice}`,
    };
  }

  function postgres(a: AnalysisFields, target: { db: string; db_major: number | null }): Requirement | null {
    const needed = a.postgres_major_required;
    if (needed === undefined) return null;
    const made = a.pg_dump_version ? ` (dumped by pg_dump ${a.pg_dump_version}${a.postgres_version ? ` from PostgreSQL ${a.postgres_version}` : ""})` : "";
    const need = `The backup${made} restores into PostgreSQL ${needed} or later`;
    if (target.db_major !== null && target.db_major >= needed) {
      return { code: "database_image_too_old", met: true, message: `${need}: the database image ${target.db} runs PostgreSQL ${target.db_major}` };
    }
    const what = target.db_major === null ? `the PostgreSQL major of the database image ${target.db} is not known (its tag does not start with one)` : `the database image ${target.db} runs PostgreSQL ${target.db_major}, which cannot restore it`;
    return {
      code: "database_image_too_old",
      met: false,
      message: `${need}, but ${what}. Have the administrator configure a database image of PostgreSQL ${needed} or later${target.db_major === null ? " (or declare its major)" : ""} (npm run erp-images -- --db postgres:${Math.max(needed, 16)}), or export the backup again with pg_dump ${target.db_major ?? needed} or older; then start again`,
    };
  }

  function dumpSafety(a: AnalysisFields): Requirement | null {
    const count = a.dump_hazard_count ?? 0;
    const first = a.dump_hazards?.[0];
    if (count === 0 || first === undefined) return null;
    return {
      code: "dump_unsafe",
      met: false,
      message: `The backup's dump holds ${count} thing${count === 1 ? "" : "s"} pg_dump does not write for a database of the ERP and Berth does not load (psql meta-commands, or statements reaching the server's programs, files or roles), the first on line ${first.line} (${first.kind}): ${first.text}. Make the backup again with the ERP's database manager or pg_dump, and upload that`,
    };
  }

  /** The requirements of an analysed migration, each compared with the target now. */
  async function check(s: RequirementSubject): Promise<Requirement[]> {
    const target = await deps.images.imageFor(s.analysis.erp_version);
    return [dumpSafety(s.analysis), postgres(s.analysis, target), await enterprise(s, target.enterprise)].filter((r): r is Requirement => r !== null);
  }

  return {
    check,
    /** Throws the first requirement not met, as a DomainError with its code (409). */
    async assertMet(s: RequirementSubject): Promise<void> {
      const unmet = (await check(s)).find((r) => !r.met);
      if (unmet) throw new DomainError(unmet.code, unmet.message);
    },
  };
}
export type MigrationRequirements = ReturnType<typeof createMigrationRequirements>;
