// Every stable error code Berth answers with, and the HTTP status it travels as. The one
// place a status is chosen: services and hooks throw DomainError(code, …) (errors.ts), and
// the error handler (error-handler.ts) reads the status here. A new code goes in this table;
// a code missing from it does not compile.
export const ERROR_STATUS = {
  // 400: the request itself is wrong
  validation_error: 400,
  invalid_json: 400,
  invalid_request: 400,
  invalid_cursor: 400,
  invalid_idempotency_key: 400,
  invalid_last_event_id: 400,
  confirm_required: 400,
  delivery_id_missing: 400,
  environment_inactive: 400,
  /** A promotion to production without previous_stage while the project has another production environment. */
  previous_stage_required: 400,
  invalid_webhook_url: 400,
  /** A domain or alias that is not a host name of two labels or more (an IP address, a wildcard, a trailing dot, one label). */
  invalid_domain: 400,
  /** A name under the installation's base domain (BERTH_BASE_DOMAIN) other than the environment's own generated one. */
  domain_reserved: 400,
  /** A Host header that is not a plain host[:port]: it would end up in install.sh. */
  invalid_host: 400,
  not_cancellable: 400,
  not_retryable: 400,
  not_rollback_target: 400,
  server_not_found: 400,
  unsupported_erp_version: 400,
  /** An environment variable name that is not [A-Za-z_][A-Za-z0-9_]* (at most 255 characters). */
  variable_name_invalid: 400,
  /** An environment variable name Berth or the ERP image sets itself (HOST, PORT, USER, PASSWORD, BERTH_*, …). */
  variable_reserved: 400,
  /** An environment variable value longer than the limit (32 KiB, UTF-8). */
  variable_value_too_large: 400,
  /** A backup schedule that cannot run: a time not HH:MM (UTC), or a retention that keeps no backup. */
  backup_schedule_invalid: 400,
  /** A project's or migration's git_repo_url that is not https or ssh (file://, a local path, http://, git://, ext::, a leading "-"; lib/git-source.ts). */
  git_url_invalid: 400,
  /** A project's default_branch or a migration's git_branch that is not a Git branch name (check-ref-format) or starts with "-". */
  git_branch_invalid: 400,
  /** An add-on repository's git_url that is not https or ssh, or carries credentials. */
  addon_url_invalid: 400,
  addon_branch_invalid: 400,
  addon_commit_invalid: 400,
  /** A sub-path that is not a relative folder of the repository (absolute, "..", odd characters). */
  addon_path_invalid: 400,
  addon_name_invalid: 400,
  /** A deploy key with an https URL, a token with an ssh URL, or a token without access "token". */
  addon_access_mismatch: 400,
  addon_token_required: 400,
  addon_token_invalid: 400,
  /** A migration created without data_processing_consent true. */
  consent_required: 400,
  /** An import URL that is not an https URL (or carries credentials). */
  invalid_import_url: 400,
  // 401: who is calling is unknown
  authentication_required: 401,
  invalid_authorization_header: 401,
  invalid_api_key: 401,
  api_key_revoked: 401,
  invalid_credentials: 401,
  invalid_session: 401,
  /** A credential in the query string (?access_token=): refused, URLs end up in logs. */
  query_token_refused: 401,
  /** A stream ticket that is malformed, expired, already used or for another organisation. */
  invalid_stream_ticket: 401,
  invalid_enrollment_token: 401,
  enrollment_token_expired: 401,
  enrollment_token_used: 401,
  signature_missing: 401,
  signature_invalid: 401,
  /** An agent's backup upload whose token is malformed, altered, expired or for another backup. */
  upload_token_invalid: 401,
  // 403: known, but not allowed
  permission_denied: 403,
  /** Granting the owner role, or changing or removing an owner, is for owners (and portal admins). */
  owner_required: 403,
  plan_upgrade_required: 403,
  project_scoped_key: 403,
  read_only_key: 403,
  /** Registration is by invitation only (BERTH_REGISTRATION=invite), or closed. */
  registration_closed: 403,
  /** An invitation is accepted by the account of the address it was sent to, and by no other. */
  invitation_email_mismatch: 403,
  /** A backup download link that was altered or is incomplete. */
  download_link_invalid: 403,
  // 404
  not_found: 404,
  /** GET /docs/<topic> for a topic that is not a file of apps/control-plane/docs (GET /docs lists them). */
  doc_not_found: 404,
  user_not_found: 404,
  route_not_found: 404,
  /** An invitation token that is unknown, expired, revoked or already used. */
  invitation_not_found: 404,
  /** A file the backup does not have in the backup store. */
  backup_file_not_found: 404,
  // 409: the state of things forbids it now
  backup_not_ready: 409,
  backup_not_restorable: 409,
  /** The backup is still being made: it can be neither downloaded, restored nor deleted yet. */
  backup_in_progress: 409,
  /** The backup's files are only on its server (a pre-deploy snapshot, or a backup made before the backup store): no download, no restore elsewhere. */
  backup_not_stored: 409,
  /** A pre-deploy snapshot: its server keeps and prunes those itself. */
  backup_not_deletable: 409,
  /** An upload for a backup that is no longer pending (completed, failed or deleted). */
  backup_upload_closed: 409,
  deployment_in_progress: 409,
  email_taken: 409,
  environment_name_taken: 409,
  /** A second production environment in a project (create with stage production): promote instead. */
  production_exists: 409,
  /** A PATCH of the stage to production, or of the production environment's stage: only a promotion does that. */
  stage_change_refused: 409,
  /** copy-from onto the production environment: a copy only ever replaces a staging or development environment's data. */
  copy_into_production: 409,
  /** copy-from with backup "latest" while the source has no completed backup in the backup store. */
  copy_source_has_no_backup: 409,
  /** copy-from of an environment never deployed (or destroyed), or onto one never deployed: one of them has no data to give or take. */
  copy_not_deployed: 409,
  /** copy-from with backup "fresh" from another server while the source runs another operation: it cannot be backed up for the copy now. */
  copy_source_busy: 409,
  /** Another environment (of any organisation) is served at that name. */
  domain_taken: 409,
  environment_not_running: 409,
  environment_not_stopped: 409,
  environments_running: 409,
  idempotency_key_in_use: 409,
  /** The organisation's last owner can be neither demoted nor removed: make another owner first. */
  last_owner: 409,
  task_in_progress: 409,
  task_not_cancellable: 409,
  /** The organisation holds as many active API keys as allowed: revoke one first. */
  api_key_limit_reached: 409,
  /** The address is already a member of the organisation. */
  already_member: 409,
  /** An invitation to this address is already open: resend or revoke it. */
  invitation_exists: 409,
  /** The environment holds as many variables as allowed (100): delete one first. */
  variable_limit_reached: 409,
  /** The platform, organisation or environment holds as many add-on repositories as allowed (50). */
  addon_repository_limit_reached: 409,
  /** A migration that takes no backup now (already analysed, running, completed, cancelled). */
  migration_not_uploadable: 409,
  /** An upload chunk or file before upload/init. */
  upload_not_initialized: 409,
  /** Completing a parallel-part upload the bucket cannot assemble (a part missing, a wrong ETag). */
  upload_incomplete: 409,
  /** A resumable upload part past the number allowed (100 per upload, 1000 per organisation), or a final concatenation listing more. */
  too_many_upload_parts: 409,
  /** An upload sent to the endpoint of another tier than upload/init gave. */
  wrong_upload_tier: 409,
  /** The migration has no analysis yet (GET analysis, available-vms). */
  migration_not_analyzed: 409,
  migration_not_configurable: 409,
  /** start before configure (status ready with a target server). */
  migration_not_ready: 409,
  /** start of a ready migration: running the 12 steps on an agent is not in this version yet. */
  migration_not_cancellable: 409,
  migration_not_retryable: 409,
  /** DELETE while the migration runs on a server. */
  migration_in_progress: 409,
  /** unlink-environment of a migration that created no environment. */
  migration_not_linked: 409,
  migration_backup_unavailable: 409,
  /** start of a migration whose backup has Enterprise modules, while the target has no Enterprise add-ons (an Enterprise repository as add-on repository, or an image declared Enterprise). */
  enterprise_addons_required: 409,
  /** start of a migration whose dump needs a newer PostgreSQL than the database image runs (or whose image's major is unknown). */
  database_image_too_old: 409,
  /** The backup's dump holds psql meta-commands or statements reaching the server's programs, files or roles (analysis dump_hazards): it is not loaded. */
  dump_unsafe: 409,
  // others
  payload_too_large: 413,
  /** A download link past its expiry (15 minutes): ask for a new one. */
  download_link_expired: 410,
  /** A Range a backup file cannot satisfy (past its end). */
  range_not_satisfiable: 416,
  /** A migration backup (upload/init, a resumable upload's creation, import-url) that would take the organisation's migration backups past BERTH_MIGRATION_QUOTA_BYTES. */
  upload_quota_exceeded: 413,
  /** Resumable upload parts (Upload-Concat: partial) that together would exceed the size declared at upload/init. */
  upload_parts_too_large: 413,
  /** An uploaded file whose size or SHA-256 differs from what its sender declared: it was not kept. */
  upload_checksum_mismatch: 422,
  /** copy-from naming the target itself as its source. */
  copy_source_is_target: 422,
  /** copy-from naming an environment of another project as its source: a copy stays within its project. */
  copy_source_other_project: 422,
  /** A project's development_server_id that is not a live server of the project's organisation. */
  development_server_invalid: 422,
  unsupported_media_type: 415,
  rate_limit_exceeded: 429,
  /** As many live event streams are open as allowed, for the organisation or the person. */
  too_many_streams: 429,
  internal_error: 500,
  jobs_unavailable: 503,
  /** PostgreSQL could not be reached (restarting, failing over): retry after Retry-After, a write with the same Idempotency-Key. */
  database_unavailable: 503,
  /** This replica is draining (SIGTERM): an agent link or event stream belongs on another replica. */
  replica_draining: 503,
  /** The outgoing mail server refused or could not be reached; nothing was sent or kept. */
  mail_unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_STATUS[code];
}
