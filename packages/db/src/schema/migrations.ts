// Migrations of ERP backups from elsewhere (modules/migrations).
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgTable, text, uuid } from "drizzle-orm/pg-core";
import { id, ts } from "./columns.ts";
import { organizations } from "./organizations.ts";
import { servers } from "./servers.ts";

/**
 * A migration of an ERP backup from elsewhere (platform spec 2.5, 4.3): the record, its upload
 * (tier, declared size and SHA-256, where the verified bytes are in the backup store), the
 * analysis of the stored backup (JSON as the analysis returned it, plus the figures the record
 * shows) and the configuration chosen for it. The backup's bytes are never in a row.
 */
export const migrations = pgTable(
  "migrations",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    /** vendor_paas | on_premise | vendor_online | other_paas */
    sourceType: text("source_type").notNull(),
    /** pending | uploading | importing | analyzed | ready | processing | completed | failed | cancelled | unlinked */
    status: text("status").notNull().default("pending"),
    progressPercent: integer("progress_percent").notNull().default(0),
    currentStep: text("current_step"),
    projectName: text("project_name").notNull(),
    vendorProjectName: text("vendor_project_name"),
    vendorBranch: text("vendor_branch"),
    /** The repository URL without its userinfo (user:token@), which is in gitRepoCredentialsEnc, as for projects. */
    gitRepoUrl: text("git_repo_url"),
    /** The URL's userinfo sealed with the master key (lib/master-key.ts); handed to the project the migration makes. */
    gitRepoCredentialsEnc: text("git_repo_credentials_enc"),
    gitBranch: text("git_branch"),
    dataProcessingConsentAt: ts("data_processing_consent_at").notNull(),
    createdBy: uuid("created_by"),
    /** The backup's name as uploaded or imported. */
    fileName: text("file_name"),
    /** tier_1 | tier_2 | tier_3 | tier_4 | import (set by upload/init or import-url). */
    uploadTier: text("upload_tier"),
    /** What the sender declared: size in bytes and lowercase hex SHA-256 (the integrity check). */
    declaredSizeBytes: bigint("declared_size_bytes", { mode: "number" }),
    declaredSha256: text("declared_sha256"),
    /** Bytes received so far (progress of an upload or an import). */
    receivedBytes: bigint("received_bytes", { mode: "number" }).notNull().default(0),
    /** The resumable upload (tus) under way, if any. */
    uploadId: text("upload_id"),
    importUrl: text("import_url"),
    /** local | s3: where the verified backup is; null before it arrived. */
    storage: text("storage"),
    storageKey: text("storage_key"),
    storedSizeBytes: bigint("stored_size_bytes", { mode: "number" }),
    storedSha256: text("stored_sha256"),
    /** The analysis result as returned by the analysis (platform spec 2.5). */
    analysis: jsonb("analysis"),
    erpVersionDetected: text("erp_version_detected"),
    databaseSizeBytes: bigint("database_size_bytes", { mode: "number" }),
    filestoreSizeBytes: bigint("filestore_size_bytes", { mode: "number" }),
    recommendedCpu: doublePrecision("recommended_cpu"),
    recommendedRamMb: integer("recommended_ram_mb"),
    recommendedDiskGb: integer("recommended_disk_gb"),
    estimatedMonthlyCost: doublePrecision("estimated_monthly_cost"),
    vendorEquivalentCost: doublePrecision("vendor_equivalent_cost"),
    monthlySavings: doublePrecision("monthly_savings"),
    /** The configuration (configure): target server, domain, repository. */
    targetServerId: uuid("target_server_id").references(() => servers.id),
    targetDomain: text("target_domain"),
    configuredAt: ts("configured_at"),
    /** A production copy is served as it came; any other is neutralised (no mail out, no scheduled actions). */
    production: boolean("production").notNull().default(false),
    /** The project the migration created (step 1); kept by unlink-environment. */
    projectId: uuid("project_id"),
    /** The environment the migration created (step 2); cleared by unlink-environment. */
    environmentId: uuid("environment_id"),
    /** The deployment that runs steps 3 to 12 (the environment's first, which restores the backup). */
    deploymentId: uuid("deployment_id"),
    /** The 12 steps' states while and after it runs: [{id, status}] (migration-steps.ts). */
    steps: jsonb("steps"),
    errorMessage: text("error_message"),
    retryCount: integer("retry_count").notNull().default(0),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    /** When the stored bytes of a cancelled or failed migration were removed by the cleanup job. */
    bytesRemovedAt: ts("bytes_removed_at"),
  },
  (t) => [index("migrations_org_idx").on(t.organizationId, t.createdAt, t.id), index("migrations_status_idx").on(t.status, t.updatedAt)],
);
