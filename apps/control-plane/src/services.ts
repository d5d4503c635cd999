// Builds every repo and service once from their dependencies (no globals), so the HTTP
// layer, scripts and tests share one wiring.
import type { Database } from "@berth/db";
import type { ProxySettings } from "@berth/protocol";
import type { Clock } from "./lib/clock.ts";
import { createCursorCodec } from "./lib/cursor.ts";
import { createRequestGuard, type RequestGuard } from "./lib/outbound/request-guard.ts";
import { createKeyCache } from "./modules/api-keys/key-cache.ts";
import { createApiKeysRepo } from "./modules/api-keys/api-keys.repo.ts";
import { createApiKeysService } from "./modules/api-keys/api-keys.service.ts";
import { createDeploymentsRepo } from "./modules/deployments/operations/operations.repo.ts";
import { createDeploymentsService } from "./modules/deployments/operations/operations.service.ts";
import { createEnvironmentsRepo } from "./modules/environments/environments.repo.ts";
import { createEnvironmentsService } from "./modules/environments/environments.service.ts";
import { claimsOf } from "./modules/environments/domain-claims.repo.ts";
import { createDomainVerification, dnsLookups } from "./modules/environments/domain-verification.ts";
import { environmentAddresses } from "./modules/environments/domains.ts";
import { createVariablesService } from "./modules/environments/variables.ts";
import { createMailsService } from "./modules/mails/mails.service.ts";
import { createMailsRepo } from "./modules/mails/mails.repo.ts";
import { createProjectsRepo } from "./modules/projects/projects.repo.ts";
import { createProjectsService } from "./modules/projects/projects.service.ts";
import { createServersRepo } from "./modules/servers/servers.repo.ts";
import { createWebhooksRepo } from "./modules/webhooks/webhooks.repo.ts";
import { createWebhooksService } from "./modules/webhooks/webhooks.service.ts";
import { createWebhookDeliveries } from "./modules/webhooks/webhook-deliveries.ts";
import { createWebhookDeliveriesRepo } from "./modules/webhooks/webhook-deliveries.repo.ts";
import { createGitHooks } from "./modules/git-hooks/git-hooks.service.ts";
import { createGitHooksRepo } from "./modules/git-hooks/git-hooks.repo.ts";
import { createStagingRefresh } from "./modules/git-hooks/staging-refresh.ts";
import { createPushEnvironments } from "./modules/git-hooks/push-environments.ts";
import { createPushEnvironmentsRepo } from "./modules/git-hooks/push-environments.repo.ts";
import { createAgentCommands } from "./modules/agents/agent-commands.ts";
import { createAgentCommandsRepo } from "./modules/agents/agent-commands.repo.ts";
import { createEnrollment } from "./modules/agents/enrollment.ts";
import { createEnrollmentRepo } from "./modules/agents/enrollment.repo.ts";
import { createCommandSigner } from "./modules/agents/signing-keys.ts";
import { createSigningKeysRepo } from "./modules/agents/signing-keys.repo.ts";
import { createKeyRotation } from "./modules/agents/key-rotation.ts";
import { createKeyRotationRepo } from "./modules/agents/key-rotation.repo.ts";
import { createDispatcher } from "./modules/deployments/dispatch/dispatcher.ts";
import { createCopyFrom } from "./modules/environments/copy-from.ts";
import { createOperationChains } from "./modules/deployments/operations/operation-chains.ts";
import { createOperationChainsRepo } from "./modules/deployments/operations/operation-chains.repo.ts";
import { latestStoredBackup } from "./modules/environments/copy-from.repo.ts";
import { createAddonDeploySource } from "./modules/addon-repositories/addon-deploy-source.ts";
import { createErpCredentials } from "./modules/environments/erp-credentials.ts";
import { createErpCredentialsRepo } from "./modules/environments/erp-credentials.repo.ts";
import { createDispatchRepo } from "./modules/deployments/dispatch/dispatch.repo.ts";
import { createBackupsService } from "./modules/backups/backups.service.ts";
import { createBackupsRepo } from "./modules/backups/backups.repo.ts";
import { createBackupLinks } from "./modules/backups/backup-links.ts";
import { createBackupTransfers } from "./modules/backups/backup-transfers.ts";
import { createObjectStore, type ObjectStore } from "./lib/object-store/index.ts";
import { backupStoreSettings } from "./config.ts";
import { createAuditLogRepo } from "./modules/support/audit-log.repo.ts";
import { createSupport } from "./modules/support/support.service.ts";
import { createSupportRepo } from "./modules/support/support.repo.ts";
import { createErpImages } from "./modules/erp-images/erp-images.ts";
import { createErpImagesRepo } from "./modules/erp-images/erp-images.repo.ts";
import { createAccess } from "./modules/auth/access.ts";
import { createAccessRepo } from "./modules/auth/access.repo.ts";
import { createSessions } from "./modules/auth/sessions.ts";
import { createStreamTickets } from "./modules/events/stream-tickets.ts";
import { createAccountsRepo } from "./modules/auth/accounts.repo.ts";
import { createMemberships } from "./modules/organizations/memberships.service.ts";
import { createOrganizationsRepo } from "./modules/organizations/organizations.repo.ts";
import { createRateLimitsRepo } from "./modules/rate-limits/rate-limits.repo.ts";
import { createIdempotencyRepo } from "./modules/idempotency/idempotency.repo.ts";
import { createLeaseMeter } from "./modules/rate-limits/lease-meter.ts";
import { createRateLimiter } from "./modules/rate-limits/rate-limiter.ts";
import { createInvitations } from "./modules/invitations/invitations.service.ts";
import { createInvitationsRepo } from "./modules/invitations/invitations.repo.ts";
import { NO_MAIL, type Mailer } from "./lib/mail/mailer.ts";
import { createBackupSchedulesRepo } from "./modules/backups/backup-schedules.repo.ts";
import { createBackupSchedules } from "./modules/backups/backup-schedules.service.ts";
import { createBackupScheduler, type DeleteBackup } from "./modules/backups/backup-scheduler.ts";
import { createAddonRepositoriesRepo } from "./modules/addon-repositories/addon-repositories.repo.ts";
import { createAddonRepositoriesService } from "./modules/addon-repositories/addon-repositories.service.ts";
import type { Jobs } from "./db/jobs.ts";
import { createMigrations } from "./modules/migrations/migrations.ts";
import { createMigrationArchives } from "./modules/migrations/execution/migration-archive.ts";
import type { AnalyzeBackup } from "./modules/migrations/findings/migration-analysis.ts";
import { createMigrationsRepo } from "./modules/migrations/record/migrations.repo.ts";
import { migrationQuotaBytes, migrationUploadDir } from "./config.ts";
import type { TierLimits } from "./modules/migrations/record/migration-states.ts";

export function createServices(deps: {
  db: Database;
  clock: Clock;
  cursorSecret: string;
  masterKey: Buffer;
  /** For writes a database crash may lose at no cost (see lib/relaxed-pool.ts); defaults to db. */
  relaxedDb?: Database;
  /** Every outgoing HTTP request goes through it (SSRF guard); defaults to one without exceptions. */
  outbound?: RequestGuard;
  /** The replica's background jobs, where services queue work; absent (scripts): queueing answers 503 jobs_unavailable. */
  jobs?: Pick<Jobs, "send">;
  /** Outgoing mail (invitations); defaults to none (every send refused). */
  mailer?: Mailer;
  /** Where environments without a domain are served (BERTH_BASE_DOMAIN); none: they have no URL. */
  baseDomain?: string | null;
  /** The DNS servers domain claims are verified through (BERTH_DNS_SERVERS, ip or ip:port); empty: the system's. */
  dnsServers?: string[];
  /** The servers' reverse proxy, sent with every deploy; none: the agents keep what they have. */
  proxy?: ProxySettings;
  /** How the retention rule deletes a backup; default: the backups service's delete (stored files, then record). */
  deleteBackup?: DeleteBackup;
  /** How long after its slot a scheduled backup may take before the slot is reported missed (default 2 h). */
  backupMissedGraceMs?: number;
  /** Where backups are kept once their server uploaded them (default: the settings, config.ts backupStoreSettings). */
  backupStore?: ObjectStore;
  /** Reads a stored migration backup (modules/migrations/analysis); default: none, so analyses fail saying so. */
  analyzeBackup?: AnalyzeBackup;
  /** Where resumable uploads are assembled before they move into the backup store (default: <data dir>/migration-uploads). */
  migrationUploadDir?: string;
  /** Where upload tiers begin (default: platform spec 4.3); tests lower them. */
  migrationTiers?: TierLimits;
  /** Each organisation's migration backups at most (default: the settings, config.ts migrationQuotaBytes). */
  migrationQuotaBytes?: number;
}) {
  const { db, clock } = deps;
  const addresses = environmentAddresses(deps.baseDomain ?? null);
  const signer = createCommandSigner({ repo: createSigningKeysRepo(db), masterKey: deps.masterKey });
  const agentCommands = createAgentCommands({ repo: createAgentCommandsRepo({ db, relaxedDb: deps.relaxedDb ?? db }), clock, signer, masterKey: deps.masterKey });
  const images = createErpImages(createErpImagesRepo(db));
  const erpCredentials = createErpCredentials({ repo: createErpCredentialsRepo(db), environments: createEnvironmentsRepo(db), masterKey: deps.masterKey, clock });
  const addonRepositoriesRepo = createAddonRepositoriesRepo(db);
  const backupsRepo = createBackupsRepo(db);
  // Signed with the cursor secret under its own label (an instance secret every replica shares).
  const backupLinks = createBackupLinks({ secret: deps.cursorSecret, clock });
  const backupStore = deps.backupStore ?? createObjectStore(backupStoreSettings());
  const migrationArchives = createMigrationArchives({ repo: createMigrationsRepo(db), links: backupLinks, store: backupStore });
  const dispatcher = createDispatcher({
    repo: createDispatchRepo(db),
    clock,
    commands: agentCommands,
    images,
    masterKey: deps.masterKey,
    credentials: erpCredentials,
    addresses,
    ...(deps.proxy ? { proxy: deps.proxy } : {}),
    addons: createAddonDeploySource({ repo: addonRepositoriesRepo, masterKey: deps.masterKey }),
    backups: createBackupTransfers({ repo: backupsRepo, links: backupLinks }),
    migrationArchives,
  });
  const cursors = createCursorCodec(deps.cursorSecret);
  const keyCache = createKeyCache();
  const outbound = deps.outbound ?? createRequestGuard();
  const repos = {
    projects: createProjectsRepo(db),
    servers: createServersRepo(db),
    environments: createEnvironmentsRepo(db),
    deployments: createDeploymentsRepo(db),
    webhooks: createWebhooksRepo(db),
    apiKeys: createApiKeysRepo(db, deps.relaxedDb ?? db),
    rateLimits: createRateLimitsRepo(db.$client),
    idempotency: createIdempotencyRepo(db.$client),
  };
  const access = createAccess(createAccessRepo(db));
  const accounts = createAccountsRepo(db);
  const sessions = createSessions({ accounts, clock });
  const rateLimits = createRateLimiter({ meter: createLeaseMeter(repos.rateLimits), repo: repos.rateLimits, clock });
  const domainVerification = createDomainVerification({
    db,
    clock,
    dns: dnsLookups(deps.dnsServers ?? []),
    baseDomain: deps.baseDomain ?? null,
    onNamesChanged: (row) => dispatcher.routeUpdate(row),
  });
  const environments = createEnvironmentsService({
    verification: domainVerification,
    claims: (ids) => claimsOf(db, ids),
    environments: repos.environments,
    projects: repos.projects,
    servers: repos.servers,
    cursors,
    clock,
    addresses,
    onNamesChanged: (row) => dispatcher.routeUpdate(row),
  });
  const deployments = createDeploymentsService({
    deployments: repos.deployments,
    environments: repos.environments,
    cursors,
    clock,
    dispatcher,
    credentials: erpCredentials,
    pool: db.$client,
    limits: rateLimits,
    access,
    environmentsService: environments,
    migrationBackupStored: (migrationId) => migrationArchives.stored(migrationId),
  });
  const backups = createBackupsService({ backups: backupsRepo, environments: repos.environments, deployments, cursors, store: backupStore, links: backupLinks });
  const audit = createAuditLogRepo({ db, cursors });
  const apiKeys = createApiKeysService({ apiKeys: repos.apiKeys, cursors, clock, onRevoked: (id) => keyCache.drop(id) });
  const projectsService = createProjectsService({ projects: repos.projects, servers: repos.servers, cursors, clock, masterKey: deps.masterKey });
  const backupSchedulesRepo = createBackupSchedulesRepo(db);
  const backupScheduler = createBackupScheduler({
    schedules: backupSchedulesRepo,
    backups,
    clock,
    // The retention rule removes a backup as a user's DELETE does: its stored files, then its record.
    deleteBackup: deps.deleteBackup ?? ((organizationId, backupId) => backups.delete({ organizationId, projectId: null }, backupId)),
    ...(deps.backupMissedGraceMs !== undefined ? { missedGraceMs: deps.backupMissedGraceMs } : {}),
  });
  const migrations = createMigrations({
    db,
    clock,
    masterKey: deps.masterKey,
    store: backupStore,
    jobs: deps.jobs,
    access,
    servers: repos.servers,
    images,
    addonRepositories: addonRepositoriesRepo,
    projects: projectsService,
    projectsRepo: repos.projects,
    environments,
    environmentsRepo: repos.environments,
    operations: deployments,
    analyze: deps.analyzeBackup,
    uploadDir: deps.migrationUploadDir ?? migrationUploadDir(),
    tierLimits: deps.migrationTiers,
    quotaBytes: deps.migrationQuotaBytes ?? migrationQuotaBytes(),
    environmentUrls: async (organizationId, environmentIds) => {
      const envs = await repos.environments.getMany({ organizationId, projectId: null }, environmentIds);
      return new Map(envs.map((env) => [env.id, addresses.url(env)]));
    },
    cancelDeployment: async (deploymentId, by) => void (await repos.deployments.cancel(deploymentId, clock.now(), by)),
  });
  const copyFrom = createCopyFrom({
    environments: repos.environments,
    latestBackup: latestStoredBackup(db),
    deployments,
    sourceBusy: (environmentId) => repos.deployments.hasActive(environmentId),
    backupNow: (scope, environmentId, backupId, comment, actor) => backups.create(scope, environmentId, { comment }, actor, backupId),
  });
  const gitHooksRepo = createGitHooksRepo(db);
  return {
    repos,
    cursors,
    addresses,
    projects: projectsService,
    environments,
    domainVerification,
    variables: createVariablesService({ environments: repos.environments, masterKey: deps.masterKey, clock }),
    mails: createMailsService({ environments: repos.environments, mails: createMailsRepo(db), cursors, clock }),
    deployments,
    backups,
    erpCredentials,
    audit,
    copyFrom,
    chains: createOperationChains({ repo: createOperationChainsRepo(db), dispatcher, start: deployments, clock }),
    support: createSupport({ repo: createSupportRepo(db), audit, commands: agentCommands, deployments, backups }),
    webhooks: createWebhooksService({ webhooks: repos.webhooks, projects: repos.projects, cursors, clock, outbound, masterKey: deps.masterKey }),
    webhookDeliveries: createWebhookDeliveries({ repo: createWebhookDeliveriesRepo(db), webhooks: repos.webhooks, cursors, clock, outbound, masterKey: deps.masterKey, addresses }),
    gitHooks: createGitHooks({
      repo: gitHooksRepo,
      clock,
      masterKey: deps.masterKey,
      deployments,
      stagingRefresh: createStagingRefresh({ repo: gitHooksRepo, copyFrom }),
      pushEnvironments: createPushEnvironments({ repo: createPushEnvironmentsRepo(db), environments, deployments }),
    }),
    apiKeys,
    keyCache,
    rateLimits,
    signer,
    enrollment: createEnrollment({ repo: createEnrollmentRepo(db), clock, signer }),
    agentCommands,
    keyRotation: createKeyRotation({ repo: createKeyRotationRepo(db), signer, commands: agentCommands }),
    images,
    dispatcher,
    access,
    sessions,
    // Signed with the cursor secret under its own label (an instance secret every replica shares).
    streamTickets: createStreamTickets({ secret: deps.cursorSecret, clock, sessions, keys: repos.apiKeys, counters: repos.rateLimits }),
    memberships: createMemberships({ repo: createOrganizationsRepo(db), accounts, users: sessions, keys: apiKeys, clock }),
    invitations: createInvitations({ repo: createInvitationsRepo(db), accounts, mailer: deps.mailer ?? NO_MAIL, sessions, clock }),
    backupSchedules: createBackupSchedules({ schedules: backupSchedulesRepo, environments: repos.environments, clock }),
    backupScheduler,
    addonRepositories: createAddonRepositoriesService({ repo: addonRepositoriesRepo, masterKey: deps.masterKey, clock }),
    migrations,
    migrationArchives,
  };
}
export type Services = ReturnType<typeof createServices>;
