// Request and response schemas of the migrations API (platform spec 2.5, 4.3), with the
// parts the spec leaves "not shown" described for the OpenAPI document.
import { Type, type Static } from "typebox";
import { Nullable, StringEnum, Timestamp, Uuid } from "../../../lib/http-schemas.ts";
import { MIGRATION_STATUSES, SOURCE_TYPES } from "./migration-states.ts";
import { MIGRATION_STEPS } from "./migration-steps.ts";

/** The OpenAPI tag of every migration route. */
export const MIGRATIONS_TAG = ["Migrations"];
/** The path parameters of a migration's routes. */
export const MigrationParams = Type.Object({ migration_id: Uuid });

export const Sha256 = Type.String({ pattern: "^[0-9a-fA-F]{64}$", description: "SHA-256 of the whole backup, hex" });
const Sha256Source = StringEnum(["declared", "computed"] as const, {
  description: "declared: the sender declared the SHA-256 (upload/init, header, form field, tus metadata, import-url) and the backup matched it; computed: none was declared (none is required), the server computed it while receiving. null before the backup is stored",
});

/** The analysis of a stored backup as the analysis returns it (everything but migration_id). */
export const AnalysisFields = Type.Object({
  erp_version: Type.String({ description: "major.minor, e.g. 17.0" }),
  postgres_version: Nullable(Type.String({ description: "The PostgreSQL version the dump was made from, when the dump says" })),
  database_name: Nullable(Type.String()),
  database_size_bytes: Type.Integer({ minimum: 0 }),
  filestore_size_bytes: Type.Integer({ minimum: 0 }),
  total_size_bytes: Type.Integer({ minimum: 0 }),
  total_modules: Type.Integer({ minimum: 0 }),
  standard_modules: Type.Array(Type.String()),
  custom_modules: Type.Array(Type.String()),
  partner_count: Type.Integer({ minimum: 0 }),
  user_count: Type.Integer({ minimum: 0, description: "Internal (non-portal, active) users" }),
  recommended_cpu: Type.Number({ minimum: 0 }),
  recommended_ram_mb: Type.Integer({ minimum: 0 }),
  recommended_disk_gb: Type.Integer({ minimum: 0 }),
  estimated_monthly_cost: Type.Number(),
  vendor_equivalent_cost: Type.Number(),
  monthly_savings: Type.Number(),
  format: Type.Optional(StringEnum(["zip", "tar", "tar.gz", "sql", "pg_custom"] as const, { description: "What the backup is, read from its content (never its name)" })),
  warnings: Type.Optional(
    Type.Array(Type.String(), {
      maxItems: 50,
      description:
        "What the person should know that does not stop the migration (e.g. a dump without a file store). Like warnings are one line with their count (300000 members with unsafe names were ignored, e.g. '../x'); at most 50, the rest counted in warnings_omitted",
    }),
  ),
  warnings_omitted: Type.Optional(Type.Integer({ minimum: 0, description: "Warnings left out of `warnings` past its 50" })),
  pg_dump_version: Type.Optional(Nullable(Type.String({ description: "The pg_dump release that wrote the dump, when its header says" }))),
  postgres_major_required: Type.Optional(
    Type.Integer({
      minimum: 9,
      description:
        "The oldest PostgreSQL major the backup restores into: the newest of its pg_dump's major, its source server's major and the ERP version's minimum (12; 13 for 19.0). An older dump restores into a newer PostgreSQL, never the reverse (pg_dump 17 writes SET transaction_timeout, which 16 rejects)",
    }),
  ),
  enterprise_modules: Type.Optional(
    Type.Array(Type.String(), { description: "Installed modules that exist only in the ERP's Enterprise add-ons (license OEEL-1, web_enterprise); empty for a Community database" }),
  ),
  dump_hazards: Type.Optional(
    Type.Array(
      Type.Object({
        line: Type.Integer({ minimum: 1, description: "Line of the dump" }),
        kind: Type.String({
          description:
            "meta_command, psql_variable, ambiguous (psql's own: it would run them or read the text otherwise); copy_program, copy_file, untrusted_language, extension, alter_system, role_change, server_function, session_setting, load, dynamic_code (the server's)",
        }),
        text: Type.String({ description: "What was found and why it is refused" }),
      }),
      {
        maxItems: 20,
        description:
          "What in a plain SQL dump the agent refuses to load, read as psql reads it: psql meta-commands other than pg_dump's \\restrict / \\unrestrict, and statements reaching the server's programs, files, roles or configuration, which pg_dump does not write for a database of the ERP. The first 20; start refuses with dump_unsafe while there is one",
      },
    ),
  ),
  dump_hazard_count: Type.Optional(Type.Integer({ minimum: 0, description: "How many hazards the dump has (dump_hazards lists the first 20)" })),
});
export type AnalysisFields = Static<typeof AnalysisFields>;

export const REQUIREMENT_CODES = ["enterprise_addons_required", "database_image_too_old", "dump_unsafe"] as const;
export type RequirementCode = (typeof REQUIREMENT_CODES)[number];

export const Requirement = Type.Object(
  {
    code: StringEnum(REQUIREMENT_CODES, {
      description: "What the target must have; when not met, start answers 409 with this same error code",
    }),
    met: Type.Boolean({ description: "Whether the target has it now (read at each request: adding the repository or changing the image meets it)" }),
    message: Type.String({ description: "What is needed and, when not met, what to do" }),
  },
  { title: "MigrationRequirement" },
);
export type Requirement = Static<typeof Requirement>;

export const Analysis = Type.Object(
  {
    migration_id: Uuid,
    ...AnalysisFields.properties,
    sha256: Nullable(Type.String({ description: "SHA-256 of the analysed backup as stored" })),
    sha256_source: Nullable(Sha256Source),
    requirements: Type.Array(Requirement, {
      description: "What the environment the migration creates must have for the backup to restore and run, each compared with the target now: the PostgreSQL of the database image (always listed) and, for a backup with Enterprise modules, the Enterprise add-ons. start refuses while one is not met",
    }),
  },
  { $id: "MigrationAnalysis", title: "MigrationAnalysis" },
);

export const Migration = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    source_type: StringEnum(SOURCE_TYPES),
    status: StringEnum(MIGRATION_STATUSES),
    progress_percent: Type.Integer({ minimum: 0, maximum: 100 }),
    current_step: Nullable(Type.String({ description: "uploading, downloading, verifying, analyzing, or one of the 12 execution steps" })),
    project_name: Type.String(),
    vendor_project_name: Nullable(Type.String()),
    vendor_branch: Nullable(Type.String()),
    git_repo_url: Nullable(Type.String({ description: "The repository URL, never with credentials (they are kept sealed and handed to the project the migration makes)" })),
    git_branch: Nullable(Type.String()),
    file_name: Nullable(Type.String()),
    file_size_bytes: Nullable(Type.Integer({ description: "The declared size of the backup" })),
    upload_tier: Nullable(StringEnum(["tier_1", "tier_2", "tier_3", "tier_4", "import"] as const)),
    bytes_received: Type.Integer({ description: "Bytes of the backup received so far (upload or import)" }),
    sha256: Nullable(Type.String({ description: "SHA-256 of the stored backup, once it arrived and passed the integrity check" })),
    sha256_source: Nullable(Sha256Source),
    erp_version_detected: Nullable(Type.String()),
    database_size_bytes: Nullable(Type.Integer()),
    filestore_size_bytes: Nullable(Type.Integer()),
    recommended_cpu: Nullable(Type.Number()),
    recommended_ram_mb: Nullable(Type.Integer()),
    recommended_disk_gb: Nullable(Type.Integer()),
    estimated_monthly_cost: Nullable(Type.Number()),
    vendor_equivalent_cost: Nullable(Type.Number()),
    monthly_savings: Nullable(Type.Number()),
    target_vm_id: Nullable(Uuid),
    target_domain: Nullable(Type.String()),
    production: Type.Boolean({ description: "false (default): the migrated copy is neutralised (outgoing mail servers and scheduled actions off) so a test import never e-mails real customers" }),
    project_id: Nullable(Uuid),
    environment_id: Nullable(Uuid),
    environment_url: Nullable(Type.String({ description: "Where the migrated ERP is served (https://…), once the environment exists" })),
    deployment_id: Nullable(Uuid),
    steps: Nullable(
      Type.Array(
        Type.Object({
          id: StringEnum(MIGRATION_STEPS.map((st) => st.id)),
          name: Type.String(),
          percent: Type.Integer({ description: "progress_percent once this step and every one before it is done" }),
          status: StringEnum(["pending", "running", "completed", "skipped", "failed"] as const),
        }),
        { description: "The 12 execution steps (platform spec 4.3) once started; null before" },
      ),
    ),
    error_message: Nullable(Type.String()),
    retry_count: Type.Integer(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: "Migration", title: "Migration" },
);

/** The projects' rule (lib/git-source.ts), checked by the service so every surface answers the same codes. */
const GitRepoUrlInput = Type.String({
  maxLength: 2048,
  description:
    "https or ssh Git URL, as a project's (400 `git_url_invalid` for file://, local paths, http://, git://, ext:: or a leading -); " +
    "credentials written into an https URL are sealed and never shown again",
});
const GitBranchInput = Type.String({ maxLength: 255, description: "A Git branch name, never starting with - (400 `git_branch_invalid`)" });

export const CreateMigrationBody = Type.Object(
  {
    organization_id: Uuid,
    source_type: StringEnum(SOURCE_TYPES),
    project_name: Type.String({ minLength: 1, maxLength: 100 }),
    vendor_project_name: Type.Optional(Type.String({ maxLength: 200 })),
    vendor_branch: Type.Optional(Type.String({ maxLength: 200 })),
    git_repo_url: Type.Optional(GitRepoUrlInput),
    git_branch: Type.Optional(GitBranchInput),
    data_processing_consent: Type.Boolean({ description: "Must be true: the backup holds personal data the platform will process" }),
  },
  { additionalProperties: false },
);

export const ConfigureBody = Type.Object(
  {
    target_vm_id: Uuid,
    project_name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    target_domain: Type.Optional(Nullable(Type.String({ maxLength: 253 }))),
    git_repo_url: Type.Optional(Nullable(GitRepoUrlInput)),
    git_branch: Type.Optional(Nullable(GitBranchInput)),
    production: Type.Optional(Type.Boolean({ description: "true: serve the copy as it came (mail and scheduled actions on); default false: neutralised" })),
  },
  { additionalProperties: false },
);

export const StatusAnswer = Type.Object({ status: Type.String(), migration_id: Uuid, message: Type.String() });

export const UploadInit = Type.Object({
  migration_id: Uuid,
  upload_tier: StringEnum(["tier_1", "tier_2", "tier_3", "tier_4"] as const),
  upload_url: Type.String({ description: "Absolute URL to send the backup to" }),
  method: Type.String({ description: "POST (tier_1: multipart/form-data, field file; tus: the creation request; s3_multipart: asks for part URLs)" }),
  protocol: StringEnum(["multipart", "tus", "s3_multipart"] as const),
  chunk_size_bytes: Nullable(Type.Integer({ description: "Bytes per PATCH of the resumable tiers (10 MiB)" })),
  part_size_bytes: Nullable(Type.Integer({ description: "s3_multipart: bytes of every part but the last" })),
  part_count: Nullable(Type.Integer({ description: "s3_multipart: number of parts" })),
  complete_url: Nullable(Type.String({ description: "s3_multipart: POST {parts: [{part_number, etag}]} once every part is in" })),
  max_size_bytes: Type.Integer(),
});

export const UploadResult = Type.Object({
  migration_id: Uuid,
  status: Type.String(),
  file_name: Type.String(),
  size_bytes: Type.Integer(),
  sha256: Type.String(),
  message: Type.String(),
});

export const AvailableServer = Type.Object({
  id: Uuid,
  name: Type.String(),
  hostname: Nullable(Type.String()),
  cpu_cores: Type.Number(),
  memory_gb: Type.Number(),
  disk_gb: Type.Number(),
  available_cpu: Type.Number(),
  available_memory_gb: Type.Number(),
  available_disk_gb: Type.Number(),
});
