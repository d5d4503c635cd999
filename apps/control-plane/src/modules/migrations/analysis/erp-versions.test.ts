// Version rules of migrated backups, the official-module rule, and the sizing formulas.
import { describe, expect, it } from "vitest";
import { BackupAnalysisError } from "./analysis-types.ts";
import { parseErpVersion, supportedErpVersion } from "./erp-versions.ts";
import { classifyModules } from "./official-modules.ts";
import { recommend } from "./sizing.ts";

const verdict = (raw: string) => {
  try {
    return supportedErpVersion(parseErpVersion(raw)!);
  } catch (err) {
    return (err as BackupAnalysisError).code;
  }
};

describe("ERP versions", () => {
  it("accepts 16.0-19.0 in every spelling and keeps major.minor", () => {
    for (const [raw, mm] of [["17.0", "17.0"], ["17.0+e-20250703", "17.0"], ["18.0.1.3", "18.0"], ["16.0", "16.0"], ["19.0", "19.0"]]) expect(verdict(raw!)).toBe(mm);
  });
  it("refuses deprecated, unknown and SaaS versions", () => {
    expect(verdict("15.0")).toBe("erp_version_deprecated");
    expect(verdict("14.0.1.3")).toBe("erp_version_deprecated");
    expect(verdict("13.0")).toBe("erp_version_deprecated");
    expect(verdict("12.0")).toBe("erp_version_unsupported");
    expect(verdict("20.0")).toBe("erp_version_unsupported");
    expect(verdict("saas~17.4")).toBe("saas_version");
    expect(verdict("saas~18.2.1.0")).toBe("saas_version");
    expect(parseErpVersion("latest")).toBeNull();
  });
});

describe("classifyModules", () => {
  it("uses the list, l10n_ and the enterprise licence; the rest is custom", () => {
    const r = classifyModules(new Map([["sale", "LGPL-3"], ["l10n_fr", null], ["web_foo", "OEEL-1"], ["acme", "LGPL-3"], ["odoo_looking", "LGPL-3"]]), new Set(["sale"]));
    expect(r).toEqual({ standard: ["l10n_fr", "sale", "web_foo"], custom: ["acme", "odoo_looking"] });
  });
});

describe("recommend", () => {
  it("sizes from users, database and file store", () => {
    const small = recommend({ internalUsers: 4, databaseBytes: 1 << 30, filestoreBytes: 2 * 2 ** 30, hasCustomModules: false });
    // 2 HTTP workers -> 1 CPU -> 3 workers x 324.8 MB + 512 MB PostgreSQL = 1486 MB -> 1536 MB.
    expect(small).toMatchObject({ recommended_cpu: 1, recommended_ram_mb: 1536, recommended_disk_gb: 16 });
    expect(small.vendor_equivalent_cost).toBeCloseTo(4 * 24.9, 2);
    expect(small.monthly_savings).toBeCloseTo(small.vendor_equivalent_cost - small.estimated_monthly_cost, 2);
    const big = recommend({ internalUsers: 60, databaseBytes: 0, filestoreBytes: 0, hasCustomModules: true });
    // 10 HTTP workers -> 5 CPU (2 x 5 + 1 = 11 workers).
    expect(big.recommended_cpu).toBe(5);
    expect(big.vendor_equivalent_cost).toBeCloseTo(60 * 37.4, 2);
  });
});
