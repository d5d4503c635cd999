// The control plane's whole state. PostgreSQL is the only source of truth; every table
// that holds customer data carries organization_id so every query can be scoped by it.
import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  check,
  customType,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

// Millisecond precision: a JavaScript Date holds exactly what is stored, so keyset cursors round-trip.
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: "date", precision: 3 });
const id = () => uuid("id").primaryKey().default(sql`gen_random_uuid()`);
/**
 * The writing transaction's id. Readers of an append-only stream deliver only rows whose
 * transaction is older than every transaction still running, so a row that commits late
 * can never fall behind a reader's cursor (no gaps on resume).
 */
const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => "xid8" });
const txId = () => xid8("tx").notNull().default(sql`pg_current_xact_id()`);

export const organizations = pgTable("organizations", {
  id: id(),
  name: text("name").notNull(),
  /** free | starter | pro | enterprise — the public API needs starter or higher. */
  plan: text("plan").notNull().default("starter"),
  createdAt: ts("created_at").notNull().defaultNow(),
});

export const users = pgTable(
  "users",
  {
    id: id(),
    email: text("email").notNull(),
    name: text("name").notNull(),
    passwordHash: text("password_hash"),
    isPortalAdmin: boolean("is_portal_admin").notNull().default(false),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [uniqueIndex("users_email_key").on(sql`lower(${t.email})`)],
);

/** Organisation-level roles: owner | admin | member. */
export const memberships = pgTable(
  "memberships",
  {
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    userId: uuid("user_id").notNull().references(() => users.id),
    role: text("role").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.organizationId, t.userId] })],
);

/**
 * An invitation to join an organisation: the only way a person is added to one. The invitee
 * accepts through a single-use token sent to the e-mail address (kept as SHA-256 only), so
 * an account someone registered under another person's address cannot be attached.
 */
export const invitations = pgTable(
  "invitations",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    email: text("email").notNull(),
    role: text("role").notNull(),
    tokenHash: text("token_hash").notNull(),
    invitedBy: uuid("invited_by").references(() => users.id),
    createdAt: ts("created_at").notNull().defaultNow(),
    /** When the current token was sent; a resend makes a new token and moves this. */
    sentAt: ts("sent_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    acceptedAt: ts("accepted_at"),
    acceptedBy: uuid("accepted_by").references(() => users.id),
    revokedAt: ts("revoked_at"),
  },
  (t) => [
    uniqueIndex("invitations_token_hash_key").on(t.tokenHash),
    // One open invitation per address and organisation.
    uniqueIndex("invitations_open_email_key")
      .on(t.organizationId, sql`lower(${t.email})`)
      .where(sql`${t.acceptedAt} is null and ${t.revokedAt} is null`),
  ],
);

export const servers = pgTable(
  "servers",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    name: text("name").notNull(),
    provider: text("provider").notNull().default("self-hosted"),
    region: text("region"),
    hostname: text("hostname"),
    cpuCores: integer("cpu_cores").notNull().default(0),
    ramMb: integer("ram_mb").notNull().default(0),
    diskGb: integer("disk_gb").notNull().default(0),
    /** pending (never connected) | online | offline */
    status: text("status").notNull().default("pending"),
    lastSeenAt: ts("last_seen_at"),
    /** The agent's Ed25519 public key (raw, base64), set at enrolment. */
    agentPublicKey: text("agent_public_key"),
    agentVersion: text("agent_version"),
    os: text("os"),
    arch: text("arch"),
    dockerVersion: text("docker_version"),
    enrolledAt: ts("enrolled_at"),
    /** Last command seq handed out for this server; bumped under a row lock. */
    lastCommandSeq: bigint("last_command_seq", { mode: "number" }).notNull().default(0),
    /**
     * The server's reverse proxy as its agent last reported it (proxy.state): {running, image,
     * public_addresses, error, checked_at}; null before the first report.
     */
    proxy: jsonb("proxy"),
    createdAt: ts("created_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [index("servers_org_idx").on(t.organizationId, t.createdAt, t.id)],
);

export const projects = pgTable(
  "projects",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    serverId: uuid("server_id").references(() => servers.id),
    name: text("name").notNull(),
    erpVersion: text("erp_version"),
    /** The repository URL without its userinfo (user:token@), which is in gitRepoCredentialsEnc. */
    gitRepoUrl: text("git_repo_url"),
    /** The userinfo of the repository URL as written (percent-encoded), sealed with the instance master key; null when it had none. */
    gitRepoCredentialsEnc: text("git_repo_credentials_enc"),
    defaultBranch: text("default_branch").notNull().default("main"),
    /** HMAC-SHA256 key of the inbound git push hook; sealed with the instance master key. */
    gitHookSecretEnc: text("git_hook_secret_enc"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [index("projects_org_idx").on(t.organizationId, t.createdAt, t.id)],
);

/** Project-level roles: admin | member. */
export const projectMemberships = pgTable(
  "project_memberships",
  {
    projectId: uuid("project_id").notNull().references(() => projects.id),
    userId: uuid("user_id").notNull().references(() => users.id),
    role: text("role").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.projectId, t.userId] })],
);

export const environments = pgTable(
  "environments",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").notNull().references(() => projects.id),
    serverId: uuid("server_id").references(() => servers.id),
    name: text("name").notNull(),
    /** pending | deploying | running | stopped | error */
    status: text("status").notNull().default("pending"),
    gitBranch: text("git_branch").notNull(),
    autoDeploy: boolean("auto_deploy").notNull().default(false),
    /** Lowercase host name the environment is served at; null: its generated name under BERTH_BASE_DOMAIN. */
    domain: text("domain"),
    /** More lowercase host names served like the domain. */
    aliases: text("aliases").array().notNull().default(sql`'{}'::text[]`),
    /**
     * Its route in its server's proxy as the agent last reported it (proxy.state): {mode,
     * domains: [{name, dns, certificate}], checked_at}; null: no route (or no report yet).
     */
    routing: jsonb("routing"),
    /**
     * Its environment variables: {NAME: {value_enc, updated_at}}, each value sealed with the
     * master key (AES-256-GCM), never stored or shown in clear. A deploy snapshots the map
     * into extra_data.config.variables; the dispatcher opens it into the signed command.
     */
    variables: jsonb("variables").notNull().default(sql`'{}'::jsonb`),
    cpuCores: integer("cpu_cores").notNull().default(1),
    ramMb: integer("ram_mb").notNull().default(2048),
    diskGb: integer("disk_gb").notNull().default(20),
    workers: integer("workers").notNull().default(2),
    isActive: boolean("is_active").notNull().default(true),
    containerId: text("container_id"),
    containerName: text("container_name"),
    migrationId: uuid("migration_id"),
    migrationRestoreCompleted: boolean("migration_restore_completed").notNull().default(false),
    migrationRestoreCompletedAt: ts("migration_restore_completed_at"),
    /** Last per-environment deployment version handed out; bumped under a row lock. */
    lastVersion: integer("last_version").notNull().default(0),
    /**
     * The ERP's master password (admin_passwd), sealed with the master key: generated by the
     * first deploy, replaced by a rotation, sent with every deploy. Null: none yet.
     */
    adminPasswdEnc: text("admin_passwd_enc"),
    /** When the master password was generated or last rotated. */
    adminPasswdSetAt: ts("admin_passwd_set_at"),
    /** The ERP administrator's login password (user admin), sealed; set in the database by a deploy. */
    adminLoginEnc: text("admin_login_enc"),
    /** When it was generated or rotated: the version a deploy sends and its agent reports back. */
    adminLoginSetAt: ts("admin_login_set_at"),
    /** The version the ERP's database has (a deploy reported it set); older than set_at: the next deploy sets it. */
    adminLoginAppliedAt: ts("admin_login_applied_at"),
    /**
     * How its last backup (manual or scheduled) or scheduled slot ended: {status: completed |
     * failed | missed, at, error, backup_id, slot_at}; null: none yet. Set by the backups
     * trigger and the backup scheduler; the dashboard's red mark until a later backup succeeds.
     */
    lastBackup: jsonb("last_backup"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("environments_project_idx").on(t.projectId, t.createdAt, t.id),
    uniqueIndex("environments_project_name_key").on(t.projectId, sql`lower(${t.name})`).where(sql`${t.isActive}`),
  ],
);

/**
 * Every host name an active environment is served at (its domain and aliases), one row each:
 * the primary key makes a name unique across the installation, race-free, whichever
 * organisation asks. Names are lowercase.
 */
/**
 * Claims of host names by environments (modules/environments/domain-claims.ts). A claim is
 * pending until its DNS proves it (domain-verification.ts), then verified: one verified claim
 * per name in the whole installation, one live claim per name in an organisation. Pending
 * claims of other organisations do not block each other; the first to prove the name holds
 * it and the others are released (kept, so their owner sees why the name left).
 */
export const environmentDomains = pgTable(
  "environment_domains",
  {
    name: text("name").notNull(),
    environmentId: uuid("environment_id").notNull().references(() => environments.id),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    /** pending | verified | released */
    status: text("status").notNull().default("pending"),
    /** The value of the TXT record _berth-challenge.<name> that proves the claim. */
    token: text("token").notNull().default(sql`replace(gen_random_uuid()::text, '-', '')`),
    checkedAt: ts("checked_at"),
    verifiedAt: ts("verified_at"),
  },
  (t) => [
    primaryKey({ columns: [t.environmentId, t.name] }),
    index("environment_domains_name_idx").on(t.name),
    uniqueIndex("environment_domains_verified_name_key").on(t.name).where(sql`${t.status} = 'verified'`),
    uniqueIndex("environment_domains_org_name_key").on(t.organizationId, t.name).where(sql`${t.status} <> 'released'`),
  ],
);

/** One row per operation (deploy, redeploy, restart, start, stop, rollback, destroy, backup, restore). */
export const deployments = pgTable(
  "deployments",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").notNull().references(() => projects.id),
    environmentId: uuid("environment_id").notNull().references(() => environments.id),
    serverId: uuid("server_id").references(() => servers.id),
    kind: text("kind").notNull(),
    version: integer("version").notNull(),
    /** Platform vocabulary: pending queued building deploying running success failed cancelled rolled_back destroyed */
    status: text("status").notNull(),
    trigger: text("trigger").notNull(),
    triggeredBy: uuid("triggered_by").references(() => users.id),
    apiKeyId: uuid("api_key_id"),
    gitBranch: text("git_branch"),
    gitCommit: text("git_commit"),
    gitMessage: text("git_message"),
    rollbackFromId: uuid("rollback_from_id"),
    extraData: jsonb("extra_data").notNull().default({}),
    /** A deploy's module installs and upgrades as its agent reported them: [{name, action, from_version, to_version}]; null: none reported. */
    modulesResult: jsonb("modules_result"),
    containerId: text("container_id"),
    imageTag: text("image_tag"),
    progressPercent: integer("progress_percent").notNull().default(0),
    currentStep: text("current_step"),
    stepsCompleted: integer("steps_completed").notNull().default(0),
    totalSteps: integer("total_steps").notNull().default(0),
    errorMessage: text("error_message"),
    /**
     * The idempotency key of the API request that made it (public spec 4.4) and whose key it
     * is: written in the operation's own transaction, so a retry after the answer was lost
     * finds this operation instead of making a second one.
     */
    idempotencyScope: text("idempotency_scope"),
    idempotencyKey: text("idempotency_key"),
    createdAt: ts("created_at").notNull().defaultNow(),
    startedAt: ts("started_at"),
    completedAt: ts("completed_at"),
  },
  (t) => [
    uniqueIndex("deployments_env_version_key").on(t.environmentId, t.version),
    index("deployments_idempotency_idx").on(t.idempotencyScope, t.idempotencyKey).where(sql`${t.idempotencyKey} is not null`),
    // The database, not a check-then-insert, guarantees one active operation per environment.
    uniqueIndex("deployments_one_active_per_env")
      .on(t.environmentId)
      .where(sql`${t.status} in ('pending', 'queued', 'building', 'deploying', 'running')`),
    index("deployments_env_created_idx").on(t.environmentId, t.createdAt, t.id),
    index("deployments_org_created_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").references(() => projects.id),
    /** read_only | full_access */
    access: text("access").notNull(),
    name: text("name").notNull(),
    /** The first characters of the key, safe to show (e.g. svc_live_rw_3fA9). */
    displayPrefix: text("display_prefix").notNull(),
    /** SHA-256 of the whole key; the key itself is never stored. */
    keyHash: text("key_hash").notNull(),
    createdBy: uuid("created_by").references(() => users.id),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastUsedAt: ts("last_used_at"),
    revokedAt: ts("revoked_at"),
  },
  (t) => [
    uniqueIndex("api_keys_hash_key").on(t.keyHash),
    index("api_keys_org_idx").on(t.organizationId, t.createdAt, t.id),
  ],
);

export const idempotencyRecords = pgTable(
  "idempotency_records",
  {
    /** Who the key belongs to, e.g. api_key:<uuid> or user:<uuid>. */
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    /** in_flight | completed */
    state: text("state").notNull(),
    method: text("method").notNull(),
    path: text("path").notNull(),
    statusCode: integer("status_code"),
    responseBody: text("response_body"),
    responseHeaders: jsonb("response_headers"),
    createdAt: ts("created_at").notNull(),
    lockedAt: ts("locked_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("idempotency_expires_idx").on(t.expiresAt)],
);

export const rateLimitCounters = pgTable(
  "rate_limit_counters",
  {
    bucket: text("bucket").notNull(),
    windowStart: bigint("window_start", { mode: "number" }).notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.windowStart] })],
);

export const webhookSubscriptions = pgTable(
  "webhook_subscriptions",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    projectId: uuid("project_id").references(() => projects.id),
    url: text("url").notNull(),
    events: text("events").array().notNull(),
    description: text("description"),
    enabled: boolean("enabled").notNull().default(true),
    /** Legacy: the signing secret in clear, from before 0011; the control plane seals it into secretEnc at start and empties this. */
    secret: text("secret"),
    /** The signing secret (whsec_...), sealed with the instance master key; returned only by the create. */
    secretEnc: text("secret_enc"),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
    deletedAt: ts("deleted_at"),
  },
  (t) => [index("webhooks_org_idx").on(t.organizationId, t.createdAt, t.id)],
);

/** Instance-wide secrets and settings shared by every replica (e.g. the cursor signing key). */
export const instanceSettings = pgTable("instance_settings", {
  key: text("key").primaryKey(),
  value: jsonb("value").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
});

/** One-time, short-lived tokens an agent exchanges for its server's identity. */
export const enrollmentTokens = pgTable(
  "enrollment_tokens",
  {
    id: id(),
    serverId: uuid("server_id").notNull().references(() => servers.id),
    tokenHash: text("token_hash").notNull(),
    createdBy: text("created_by"),
    createdAt: ts("created_at").notNull().defaultNow(),
    expiresAt: ts("expires_at").notNull(),
    usedAt: ts("used_at"),
  },
  (t) => [uniqueIndex("enrollment_tokens_hash_key").on(t.tokenHash)],
);

/** The control plane's command-signing keys; private keys are encrypted at rest. */
export const signingKeys = pgTable("signing_keys", {
  keyId: text("key_id").primaryKey(),
  publicKey: text("public_key").notNull(),
  /** AES-256-GCM ciphertext of the PKCS#8 PEM, under the instance master key. */
  privateKeyEnc: text("private_key_enc").notNull(),
  /** active (signs new commands) | accepted (still pinned, not signing) | retired */
  state: text("state").notNull(),
  createdAt: ts("created_at").notNull().defaultNow(),
  retiredAt: ts("retired_at"),
});

/**
 * Command outbox: a command lives here until the agent has answered it, then (without its
 * secrets) until retention deletes it.
 */
export const agentCommands = pgTable(
  "agent_commands",
  {
    commandId: uuid("command_id").primaryKey(),
    serverId: uuid("server_id").notNull().references(() => servers.id),
    seq: bigint("seq", { mode: "number" }).notNull(),
    type: text("type").notNull(),
    /** The signed command in clear: rows written before migration 0025 only, emptied once they leave pending. */
    signed: jsonb("signed"),
    /** The signed command as the agent gets it, AES-256-GCM under the instance master key; null once it left pending. */
    sealed: text("sealed"),
    /** Its parameters as staff may see them (control plane agents/shown-params.ts): no secret, no signed link. */
    shownParams: jsonb("shown_params").notNull().default({}),
    /** Who asked: user:<id>, api_key:<id> or system:<job>. */
    issuedBy: text("issued_by").notNull(),
    deploymentId: uuid("deployment_id"),
    /** pending | accepted | rejected | expired | succeeded | failed */
    state: text("state").notNull().default("pending"),
    rejectionCode: text("rejection_code"),
    result: jsonb("result"),
    error: jsonb("error"),
    createdAt: ts("created_at").notNull(),
    expiresAt: ts("expires_at").notNull(),
    sentAt: ts("sent_at"),
    acceptedAt: ts("accepted_at"),
    completedAt: ts("completed_at"),
  },
  (t) => [
    uniqueIndex("agent_commands_server_seq_key").on(t.serverId, t.seq),
    // One command per operation: dispatching twice (fast path and repair sweep) cannot double it.
    uniqueIndex("agent_commands_deployment_key").on(t.deploymentId).where(sql`${t.deploymentId} is not null`),
    index("agent_commands_pending_idx").on(t.serverId, t.seq).where(sql`${t.state} = 'pending'`),
    // Retention deletes ended commands by age.
    index("agent_commands_created_idx").on(t.createdAt),
  ],
);

/**
 * Where each server's event stream stands: the highest agent event seq stored (events at or
 * below it are duplicates). Apart from the server row, so storing events (which locks this
 * row) and issuing commands or recording liveness (which update the server row) never wait
 * for each other. A row appears with the server's first stored event.
 */
export const agentStreams = pgTable("agent_streams", {
  serverId: uuid("server_id")
    .primaryKey()
    .references(() => servers.id),
  lastEventSeq: bigint("last_event_seq", { mode: "number" }).notNull().default(0),
});

/** Which replica holds which agent's WebSocket right now. */
export const agentSessions = pgTable("agent_sessions", {
  serverId: uuid("server_id").primaryKey().references(() => servers.id),
  replicaId: text("replica_id").notNull(),
  connectionId: text("connection_id").notNull(),
  connectedAt: ts("connected_at").notNull(),
});

/**
 * Events received from agents (logs, steps, results), unique on (server_id, seq). Partitioned
 * by month on `ts` (migration 0022): the uniqueness is a UNIQUE (server_id, seq) index on each
 * partition, which drizzle cannot declare; the partitions are made and dropped by the control
 * plane's retention job.
 */
export const agentEvents = pgTable(
  "agent_events",
  {
    serverId: uuid("server_id").notNull(),
    seq: bigint("seq", { mode: "number" }).notNull(),
    kind: text("kind").notNull(),
    ts: ts("ts").notNull(),
    commandId: uuid("command_id"),
    deploymentId: uuid("deployment_id"),
    level: text("level"),
    body: jsonb("body").notNull(),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  // Most events (a server's own logs, stats) belong to no deployment: they stay out of the
  // deployment index, one index insertion less per event on the hottest write path.
  (t) => [
    index("agent_events_deployment_idx").on(t.deploymentId, t.seq).where(sql`${t.deploymentId} is not null`),
  ],
);

/** Latest resource figures of each server, from its agent's stats events. */
export const serverStats = pgTable("server_stats", {
  serverId: uuid("server_id").primaryKey().references(() => servers.id),
  sampledAt: ts("sampled_at").notNull(),
  cpuPercent: doublePrecision("cpu_percent").notNull(),
  ramUsedMb: integer("ram_used_mb").notNull(),
  ramTotalMb: integer("ram_total_mb").notNull(),
  diskUsedGb: doublePrecision("disk_used_gb").notNull(),
  diskTotalGb: doublePrecision("disk_total_gb").notNull(),
  load1: doublePrecision("load1").notNull(),
  load5: doublePrecision("load5").notNull(),
  load15: doublePrecision("load15").notNull(),
  containersRunning: integer("containers_running").notNull(),
  containersTotal: integer("containers_total").notNull(),
});

/** Backups an agent made of an environment (database dump + file store), with checksums. */
export const backups = pgTable(
  "backups",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    environmentId: uuid("environment_id").notNull().references(() => environments.id),
    /** The backup operation (a row of deployments, kind backup). */
    deploymentId: uuid("deployment_id").notNull(),
    backupType: text("backup_type").notNull().default("manual"),
    comment: text("comment"),
    /** pending | completed | failed */
    status: text("status").notNull().default("pending"),
    sizeBytes: bigint("size_bytes", { mode: "number" }),
    files: jsonb("files"),
    /** Where its files are kept off the server: null (only on the server: pre-deploy snapshots), local or s3 (the control plane's backup store). */
    storage: text("storage"),
    /** The key prefix of its files in that store. */
    storageKey: text("storage_key"),
    /** The files that arrived in the store intact, [{name, size, sha256}] (checked against what the agent declared). */
    storedFiles: jsonb("stored_files").notNull().default([]),
    errorMessage: text("error_message"),
    createdAt: ts("created_at").notNull().defaultNow(),
    completedAt: ts("completed_at"),
  },
  (t) => [index("backups_env_idx").on(t.environmentId, t.createdAt, t.id)],
);

/** People's sign-ins: opaque bearer tokens stored as SHA-256 only, expiring, revocable. */
export const sessions = pgTable(
  "sessions",
  {
    id: id(),
    userId: uuid("user_id").notNull().references(() => users.id),
    tokenHash: text("token_hash").notNull(),
    userAgent: text("user_agent"),
    ip: text("ip"),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastUsedAt: ts("last_used_at"),
    expiresAt: ts("expires_at").notNull(),
    revokedAt: ts("revoked_at"),
  },
  (t) => [uniqueIndex("sessions_token_hash_key").on(t.tokenHash), index("sessions_user_idx").on(t.userId, t.createdAt)],
);

/**
 * Extra Git repositories of ERP add-ons deployed beside an environment's own code, at three
 * levels: platform (every environment of the installation: no organisation, no environment),
 * organization (every environment of one organisation) and environment. Private access is
 * a deploy key Berth generated (public half shown, private half sealed) or a token (sealed).
 */
export const environmentAddons = pgTable(
  "environment_addons",
  {
    id: id(),
    /** platform | organization | environment */
    level: text("level").notNull().default("environment"),
    organizationId: uuid("organization_id").references(() => organizations.id),
    environmentId: uuid("environment_id").references(() => environments.id),
    name: text("name").notNull(),
    gitUrl: text("git_url").notNull(),
    branch: text("branch").notNull(),
    /** Null deploys the branch head (each deployment records the commit it got). */
    pinnedCommit: text("pinned_commit"),
    submodules: boolean("submodules").notNull().default(false),
    /** Folders of the repository to look for modules in; empty: all of it. */
    subPaths: text("sub_paths").array().notNull().default(sql`'{}'::text[]`),
    /** public | deploy_key | token */
    access: text("access").notNull().default("public"),
    /** OpenSSH public key line of the deploy key (access deploy_key). */
    deployKeyPublic: text("deploy_key_public"),
    /** The deploy key's OpenSSH private key or the token, sealed with the master key. */
    secretEnc: text("secret_enc"),
    autoDeploy: boolean("auto_deploy").notNull().default(true),
    isActive: boolean("is_active").notNull().default(true),
    createdAt: ts("created_at").notNull().defaultNow(),
    updatedAt: ts("updated_at").notNull().defaultNow(),
  },
  (t) => [
    index("environment_addons_env_idx").on(t.environmentId),
    index("environment_addons_org_idx").on(t.organizationId),
    check(
      "environment_addons_level_scope",
      sql`(${t.level} = 'platform' and ${t.organizationId} is null and ${t.environmentId} is null) or (${t.level} = 'organization' and ${t.organizationId} is not null and ${t.environmentId} is null) or (${t.level} = 'environment' and ${t.organizationId} is not null and ${t.environmentId} is not null)`,
    ),
  ],
);

/** Inbound git push deliveries already handled: a redelivered id deploys nothing twice. */
export const gitHookDeliveries = pgTable(
  "git_hook_deliveries",
  {
    gitHost: text("git_host").notNull(),
    deliveryId: text("delivery_id").notNull(),
    projectId: uuid("project_id").notNull().references(() => projects.id),
    deploymentIds: uuid("deployment_ids").array().notNull(),
    receivedAt: ts("received_at").notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.gitHost, t.deliveryId, t.projectId] })],
);

/**
 * Structured log entries of an operation, from its agent or from the control plane. Partitioned
 * by month on `ts` (migration 0022), hence the key (id, ts); ids are unique by their sequence.
 */
export const deploymentLogs = pgTable(
  "deployment_logs",
  {
    id: bigserial("id", { mode: "number" }).notNull(),
    organizationId: uuid("organization_id").notNull(),
    deploymentId: uuid("deployment_id").notNull(),
    ts: ts("ts").notNull(),
    /** debug | info | warning | error */
    level: text("level").notNull(),
    message: text("message").notNull(),
    step: text("step"),
    data: jsonb("data").notNull().default({}),
    tx: txId(),
  },
  (t) => [
    primaryKey({ columns: [t.id, t.ts] }),
    index("deployment_logs_deployment_idx").on(t.deploymentId, t.id),
    index("deployment_logs_org_tx_idx").on(t.organizationId, t.tx, t.id),
  ],
);

/** An organisation's live events other than log lines (status changes, server figures, migrations). */
export const orgEvents = pgTable(
  "org_events",
  {
    id: bigserial("id", { mode: "number" }).primaryKey(),
    organizationId: uuid("organization_id").notNull(),
    type: text("type").notNull(),
    data: jsonb("data").notNull(),
    createdAt: ts("created_at").notNull().defaultNow(),
    tx: txId(),
  },
  (t) => [index("org_events_org_tx_idx").on(t.organizationId, t.tx, t.id), index("org_events_created_idx").on(t.createdAt)],
);

/** One outgoing webhook delivery: an event for one subscription, its attempts and outcome. */
export const webhookDeliveries = pgTable(
  "webhook_deliveries",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    subscriptionId: uuid("subscription_id").notNull().references(() => webhookSubscriptions.id),
    eventId: text("event_id").notNull(),
    eventType: text("event_type").notNull(),
    payload: jsonb("payload").notNull(),
    /** pending | succeeded | failed */
    status: text("status").notNull().default("pending"),
    attempts: integer("attempts").notNull().default(0),
    responseStatus: integer("response_status"),
    responseBody: text("response_body"),
    error: text("error"),
    createdAt: ts("created_at").notNull().defaultNow(),
    lastAttemptAt: ts("last_attempt_at"),
    deliveredAt: ts("delivered_at"),
  },
  (t) => [
    uniqueIndex("webhook_deliveries_event_key").on(t.subscriptionId, t.eventId),
    index("webhook_deliveries_sub_idx").on(t.subscriptionId, t.createdAt, t.id),
  ],
);

/** Who did what to which target, and why: every support command and sensitive change. */
export const auditLog = pgTable(
  "audit_log",
  {
    id: id(),
    organizationId: uuid("organization_id").notNull().references(() => organizations.id),
    actorUserId: uuid("actor_user_id").references(() => users.id),
    action: text("action").notNull(),
    targetType: text("target_type").notNull(),
    targetId: text("target_id").notNull(),
    reason: text("reason"),
    commandId: uuid("command_id"),
    deploymentId: uuid("deployment_id"),
    result: jsonb("result"),
    createdAt: ts("created_at").notNull().defaultNow(),
  },
  (t) => [
    index("audit_log_org_idx").on(t.organizationId, t.createdAt, t.id),
    // A command's entry; retention keeps the commands entries name.
    index("audit_log_command_idx").on(t.commandId).where(sql`${t.commandId} is not null`),
  ],
);

/**
 * An environment's backup schedule and retention (one row once it is deployed; a missing
 * row means the defaults). The scheduler claims a slot by moving last_slot_at forward in one
 * statement, so a due backup is created once whatever the number of replicas.
 */
export const backupSchedules = pgTable("backup_schedules", {
  environmentId: uuid("environment_id")
    .primaryKey()
    .references(() => environments.id, { onDelete: "cascade" }),
  organizationId: uuid("organization_id").notNull().references(() => organizations.id),
  enabled: boolean("enabled").notNull().default(true),
  /** hourly | daily | weekly */
  frequency: text("frequency").notNull().default("daily"),
  /** Minutes after midnight UTC (hourly: only the minute of the hour counts). */
  minuteOfDay: integer("minute_of_day").notNull(),
  /** ISO weekday 1 (Monday) to 7 (Sunday), for weekly schedules. */
  weekday: integer("weekday").notNull().default(7),
  keepDaily: integer("keep_daily").notNull().default(7),
  keepWeekly: integer("keep_weekly").notNull().default(4),
  keepMonthly: integer("keep_monthly").notNull().default(3),
  /** Slots at or after this time count (set when the schedule starts or changes). */
  activeSince: ts("active_since").notNull(),
  /** The last slot a backup was created for. */
  lastSlotAt: ts("last_slot_at"),
  /** The last slot reported missed (backup.missed). */
  missedSlotAt: ts("missed_slot_at"),
  /** Completed scheduled backups up to this time have been through the retention rule. */
  prunedThrough: ts("pruned_through"),
  createdAt: ts("created_at").notNull().defaultNow(),
  updatedAt: ts("updated_at").notNull().defaultNow(),
});

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
