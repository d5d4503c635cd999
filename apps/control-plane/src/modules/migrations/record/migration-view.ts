// A migration as the API shows it (platform spec 2.5): its record, with where its
// environment is served.
import { withoutCredentials } from "../../../lib/git-credentials.ts";
import type { MigrationRow } from "./migrations.repo.ts";
import type { MigrationStatus, UploadTier } from "./migration-states.ts";
import { stepsOfMigration, stepsView } from "./migration-steps.ts";

/** Whether the stored backup's SHA-256 was declared by its sender and verified, or computed on receipt (none declared); null before it is stored. */
export const sha256Source = (m: Pick<MigrationRow, "storedSha256" | "declaredSha256">) => (m.storedSha256 === null ? null : m.declaredSha256 === null ? ("computed" as const) : ("declared" as const));

/** The API's migration; `environmentUrl`: where the linked environment is served (null when none). */
export function migrationView(m: MigrationRow, environmentUrl: string | null = null) {
  return {
    id: m.id,
    organization_id: m.organizationId,
    source_type: m.sourceType as "vendor_paas",
    status: m.status as MigrationStatus,
    progress_percent: m.progressPercent,
    current_step: m.currentStep,
    project_name: m.projectName,
    vendor_project_name: m.vendorProjectName,
    vendor_branch: m.vendorBranch,
    // Stored without credentials (sealed apart); a row from before that still never shows them.
    git_repo_url: m.gitRepoUrl === null ? null : withoutCredentials(m.gitRepoUrl),
    git_branch: m.gitBranch,
    file_name: m.fileName,
    file_size_bytes: m.declaredSizeBytes,
    upload_tier: m.uploadTier as UploadTier | "import" | null,
    bytes_received: m.receivedBytes,
    sha256: m.storedSha256,
    sha256_source: sha256Source(m),
    erp_version_detected: m.erpVersionDetected,
    database_size_bytes: m.databaseSizeBytes,
    filestore_size_bytes: m.filestoreSizeBytes,
    recommended_cpu: m.recommendedCpu,
    recommended_ram_mb: m.recommendedRamMb,
    recommended_disk_gb: m.recommendedDiskGb,
    estimated_monthly_cost: m.estimatedMonthlyCost,
    vendor_equivalent_cost: m.vendorEquivalentCost,
    monthly_savings: m.monthlySavings,
    target_vm_id: m.targetServerId,
    target_domain: m.targetDomain,
    production: m.production,
    project_id: m.projectId,
    environment_id: m.environmentId,
    environment_url: environmentUrl,
    deployment_id: m.deploymentId,
    steps: m.steps === null ? null : stepsView(stepsOfMigration(m)),
    error_message: m.errorMessage,
    retry_count: m.retryCount,
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}
