// What a migration's target must have: the Enterprise add-ons for a backup with Enterprise
// modules (which repository counts as them), and a database image at least as new as the dump.
import { describe, expect, it } from "vitest";
import type { AddonRepositoryRow, AddonScope } from "../../addon-repositories/addon-repositories.repo.ts";
import { createMigrationRequirements, isEnterpriseRepository } from "./migration-requirements.ts";
import type { AnalysisFields } from "../record/migration-schemas.ts";

describe("isEnterpriseRepository", () => {
  it("is a repository whose path ends in enterprise, on the backup's version or a branch of its own", () => {
    for (const gitUrl of ["https://github.com/odoo/enterprise.git", "https://github.com/odoo/enterprise", "git@github.com:odoo/enterprise.git", "ssh://git@git.example.com:2222/mirrors/enterprise.git/"]) {
      expect(isEnterpriseRepository({ gitUrl, branch: "17.0" }, "17.0"), gitUrl).toBe(true);
    }
    expect(isEnterpriseRepository({ gitUrl: "https://git.example.com/mirrors/enterprise.git", branch: "main" }, "17.0")).toBe(true);
  });
  it("is not another repository, nor the Enterprise one on another version's branch", () => {
    expect(isEnterpriseRepository({ gitUrl: "https://github.com/odoo/enterprise.git", branch: "16.0" }, "17.0")).toBe(false);
    expect(isEnterpriseRepository({ gitUrl: "https://github.com/acme/odoo-enterprise-addons.git", branch: "17.0" }, "17.0")).toBe(false);
    expect(isEnterpriseRepository({ gitUrl: "https://github.com/enterprise/acme.git", branch: "17.0" }, "17.0")).toBe(false);
  });
});

/** An analysis with what the requirements read (the rest of it plays no part). */
const analysis = (over: Partial<AnalysisFields>): AnalysisFields => ({ erp_version: "17.0", postgres_version: "15.8", ...over }) as AnalysisFields;

function setup(target: { db: string; db_major: number | null; enterprise?: boolean }, repos: Partial<Record<AddonScope["level"], Partial<AddonRepositoryRow>[]>> = {}) {
  return createMigrationRequirements({
    images: { imageFor: async (v) => ({ version: v ?? "17.0", image: "odoo:17.0", enterprise: false, ...target }) },
    addonRepositories: { list: async (scope) => (repos[scope.level] ?? []) as AddonRepositoryRow[] },
  });
}
const subject = (a: AnalysisFields) => ({ organizationId: "org", environmentId: null, analysis: a });

describe("createMigrationRequirements", () => {
  it("a dump newer than the database image is refused with database_image_too_old, saying what to do", async () => {
    const r = setup({ db: "postgres:16", db_major: 16 });
    const a = analysis({ postgres_major_required: 17, pg_dump_version: "17.2", postgres_version: "17.2" });
    expect(await r.check(subject(a))).toEqual([
      {
        code: "database_image_too_old",
        met: false,
        message: expect.stringMatching(/^The backup \(dumped by pg_dump 17\.2 from PostgreSQL 17\.2\) restores into PostgreSQL 17 or later, but the database image postgres:16 runs PostgreSQL 16, which cannot restore it\. Have the administrator configure a database image of PostgreSQL 17 or later/),
      },
    ]);
    await expect(r.assertMet(subject(a))).rejects.toMatchObject({ code: "database_image_too_old" });
  });

  it("an older dump into a newer PostgreSQL is met; an image of unknown major is not", async () => {
    const a = analysis({ postgres_major_required: 15, pg_dump_version: "15.8" });
    expect(await setup({ db: "postgres:17", db_major: 17 }).check(subject(a))).toEqual([{ code: "database_image_too_old", met: true, message: expect.stringContaining("runs PostgreSQL 17") }]);
    const unknown = await setup({ db: "pg:latest", db_major: null }).check(subject(a));
    expect(unknown[0]).toMatchObject({ met: false, message: expect.stringContaining("is not known") });
  });

  it("an analysis without the fields (made before them) asks for nothing", async () => {
    expect(await setup({ db: "postgres:16", db_major: 16 }).check(subject(analysis({})))).toEqual([]);
  });

  it("Enterprise modules need the Enterprise repository at a level the environment gets, or an image declared Enterprise", async () => {
    const a = analysis({ enterprise_modules: ["web_enterprise", "web_studio"] });
    const none = await setup({ db: "postgres:16", db_major: 16 }, { organization: [{ name: "ee", gitUrl: "https://github.com/odoo/enterprise.git", branch: "16.0" }] }).check(subject(a));
    expect(none).toEqual([
      {
        code: "enterprise_addons_required",
        met: false,
        message: expect.stringMatching(/^The backup uses 2 Enterprise modules \(web_enterprise, web_studio\), which exist only in the ERP's Enterprise add-ons.*The add-on repository ee is on branch 16\.0, not 17\.0\. .*POST \/api\/v1\/organizations\/org\/addon-repositories/),
      },
    ]);
    await expect(setup({ db: "postgres:16", db_major: 16 }).assertMet(subject(a))).rejects.toMatchObject({ code: "enterprise_addons_required" });
    const platform = await setup({ db: "postgres:16", db_major: 16 }, { platform: [{ name: "enterprise", gitUrl: "git@github.com:odoo/enterprise.git", branch: "17.0" }] }).check(subject(a));
    expect(platform).toEqual([{ code: "enterprise_addons_required", met: true, message: expect.stringContaining("the add-on repository enterprise (git@github.com:odoo/enterprise.git, branch 17.0) provides them") }]);
    expect(await setup({ db: "postgres:16", db_major: 16, enterprise: true }).check(subject(a))).toEqual([{ code: "enterprise_addons_required", met: true, message: expect.stringContaining("declared an Enterprise build") }]);
  });
});

describe("dump_unsafe", () => {
  it("a dump with hazards is refused whatever the target, naming the first and what to do; one without asks for nothing", async () => {
    const a = analysis({ dump_hazard_count: 3, dump_hazards: [{ line: 12, kind: "meta_command", text: "\\! touch /tmp/x (a psql meta-command pg_dump does not write)" }] });
    const r = setup({ db: "postgres:16", db_major: 16, enterprise: true });
    expect(await r.check(subject(a))).toEqual([
      {
        code: "dump_unsafe",
        met: false,
        message: expect.stringMatching(/^The backup's dump holds 3 things pg_dump does not write .* the first on line 12 \(meta_command\): \\! touch \/tmp\/x .* Make the backup again/),
      },
    ]);
    await expect(r.assertMet(subject(a))).rejects.toMatchObject({ code: "dump_unsafe" });
    expect(await r.check(subject(analysis({ dump_hazard_count: 0, dump_hazards: [] })))).toEqual([]);
  });
});
