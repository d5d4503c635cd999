// A fixed backup analysis, for tests and benchmarks of the migration flow around the analysis
// (uploads, imports, the state machine) that inject it instead of reading a real backup.
import type { AnalysisFields } from "../../apps/control-plane/src/modules/migrations/record/migration-schemas.ts";

export function fixedAnalysis(overrides: Partial<AnalysisFields> = {}): () => Promise<AnalysisFields> {
  const analysis: AnalysisFields = {
    erp_version: "17.0",
    postgres_version: null,
    database_name: "x",
    database_size_bytes: 1,
    filestore_size_bytes: 0,
    total_size_bytes: 1,
    total_modules: 1,
    standard_modules: ["base"],
    custom_modules: [],
    partner_count: 1,
    user_count: 1,
    recommended_cpu: 1,
    recommended_ram_mb: 1024,
    recommended_disk_gb: 10,
    estimated_monthly_cost: 1,
    vendor_equivalent_cost: 2,
    monthly_savings: 1,
    ...overrides,
  };
  return async () => analysis;
}

/**
 * A realistic small company's analysis (ERP 17.0 on PostgreSQL 16, base and sale plus one
 * custom module), which tests that show or compare an analysis start from, changing only the
 * figures they look at.
 */
export const ACME_ANALYSIS: AnalysisFields = {
  erp_version: "17.0",
  postgres_version: "16.4",
  database_name: "acme",
  database_size_bytes: 123_456,
  filestore_size_bytes: 7_890,
  total_size_bytes: 131_346,
  total_modules: 3,
  standard_modules: ["base", "sale"],
  custom_modules: ["acme_custom"],
  partner_count: 42,
  user_count: 5,
  recommended_cpu: 1,
  recommended_ram_mb: 2048,
  recommended_disk_gb: 20,
  estimated_monthly_cost: 20,
  vendor_equivalent_cost: 90,
  monthly_savings: 70,
};
