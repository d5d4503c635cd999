// Builds the control plane from its parts: shared schemas, error handling, OpenAPI, then
// the APIs. Listening is server.ts's job, so tests drive this with app.inject or a port.
import { randomUUID } from "node:crypto";
import websocket from "@fastify/websocket";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { DbHandle } from "@berth/db";
import { MAX_AGENT_FRAME_BYTES, type ProxySettings } from "@berth/protocol";
import { systemClock, type Clock } from "./lib/clock.ts";
import { createCaughtMailsApplier } from "./modules/mails/caught-mails.ts";
import { frameworkErrors, installErrorHandling } from "./lib/error-handler.ts";
import { installRateLimitHook } from "./modules/rate-limits/rate-limit-hook.ts";
import { ERROR_BODIES, ErrorBody } from "./lib/http-schemas.ts";
import { instanceSecret } from "./db/instance-secrets.ts";
import { startMaintenance, type Maintenance } from "./lib/maintenance.ts";
import { pruneOrgEvents } from "./modules/events/retention.ts";
import { createEventHub, type EventHub } from "./modules/events/event-hub.ts";
import { dashboardRoutes } from "./dashboard/dashboard.routes.ts";
import { docsRoutes } from "./modules/docs/docs.routes.ts";
import { ApiKey } from "./modules/api-keys/api-keys.routes.ts";
import { Backup } from "./modules/backups/backups.routes.ts";
import { ActionResponse, Task } from "./modules/deployments/public/deployments.routes.ts";
import { Environment } from "./modules/environments/environments.routes.ts";
import { Project } from "./modules/projects/projects.routes.ts";
import { Server } from "./modules/servers/servers.routes.ts";
import { Webhook } from "./modules/webhooks/webhooks.routes.ts";
import { User } from "./modules/auth/auth.routes.ts";
import { createAgentGateway, type AgentGateway } from "./modules/agents/link/gateway.ts";
import type { LinkLimits } from "./modules/agents/link/limits.ts";
import { createLinkRepo } from "./modules/agents/link/link.repo.ts";
import { agentsRoutes } from "./modules/agents/agents.routes.ts";
import { agentReleasesPlugin } from "./modules/agent-releases/index.ts";
import { createEventIngest } from "./modules/agents/event-ingest.ts";
import { applyDeploymentEvents } from "./modules/deployments/operations/deployment-events.ts";
import { applyProxyState } from "./modules/routing/routing-events.ts";
import { publicApi } from "./public-api/index.ts";
import { PLATFORM_PREFIX, platformApi } from "./platform-api/index.ts";
import { openApiRoutes, PUBLIC_PREFIX, registerOpenApi } from "./public-api/openapi.ts";
import { createServices, type Services } from "./services.ts";
import {
  agentLimitSettings,
  baseDomainSetting,
  dnsServersSetting,
  mailSettings,
  metricsSetting,
  outboundAllowList,
  proxySettings,
  registrationMode,
  trustProxySetting,
  type RegistrationMode,
} from "./config.ts";
import { createMailer, type MailSettings } from "./lib/mail/mailer.ts";
import { redactingLogger } from "./lib/request-log.ts";
import { validatorsOnFirstUse } from "./lib/request-validators.ts";
import { distinctSchemaSerializers } from "./lib/response-serializers.ts";
import { installRequestIdHeader, requestIdGenerator } from "./lib/request-id.ts";
import { createMetrics, type Metrics } from "./modules/metrics/metrics.ts";
import { installRequestMetrics, metricsRoutes } from "./modules/metrics/metrics.routes.ts";
import { createStreamLimits, type StreamCaps } from "./modules/events/stream-limits.ts";
import { createRequestGuard, type Resolver } from "./lib/outbound/request-guard.ts";
import { createRelaxedDb } from "./db/relaxed-pool.ts";
import { startJobs, type Jobs, type JobsOptions } from "./db/jobs.ts";
import { startBackgroundWork } from "./modules/jobs/background.ts";
import { healthRoutes } from "./modules/health/health.routes.ts";
import { createDrainState, type DrainState } from "./lifecycle/drain-state.ts";
import { STUCK_SWEEP_QUEUE } from "./modules/deployments/operations/stuck-sweep.ts";
import type { ObjectStore } from "./lib/object-store/index.ts";
import { backupTransferRoutes } from "./modules/backups/backup-transfer.routes.ts";
import { migrationArchiveRoutes } from "./modules/migrations/execution/migration-archive.routes.ts";
import { applyMigrationProgress } from "./modules/migrations/execution/migration-progress.ts";
import type { AnalyzeBackup } from "./modules/migrations/findings/migration-analysis.ts";
import type { TierLimits } from "./modules/migrations/record/migration-states.ts";

export interface AppOptions {
  database: DbHandle;
  /** 32 bytes; encrypts secrets at rest. Every replica must have the same one. */
  masterKey: Buffer;
  clock?: Clock;
  logger?: FastifyServerOptions["logger"];
  /** Which proxies' X-Forwarded-For is believed (Fastify's trustProxy; default: BERTH_TRUST_PROXY, else none). */
  trustProxy?: FastifyServerOptions["trustProxy"];
  /** Outgoing mail (default: BERTH_SMTP_URL and BERTH_MAIL_FROM; without a URL, mail goes to the log). */
  mail?: MailSettings;
  /** Who may create an account (default: BERTH_REGISTRATION, else open). */
  registration?: RegistrationMode;
  /** Open event streams allowed per organisation and per person, on each replica (default 50 and 10). */
  streamCaps?: StreamCaps;
  /** How often agents ping; two missed intervals mean a dead link. */
  heartbeatMs?: number;
  /** How often the gateway looks for commands whose announcement was lost (default 15 s). */
  outboxSweepMs?: number;
  /**
   * What one agent, or one address before its handshake, may cost each replica: log lines
   * and bytes per server per minute (default 60,000 and 64 MiB), connections in their
   * handshake per address (20) and hellos per address per minute (120).
   */
  agentLimits?: Partial<LinkLimits>;
  /** Background jobs (pg-boss): tests shorten the retry delays and polling. */
  jobs?: JobsOptions;
  /** Hosts, addresses and CIDRs outgoing requests (webhooks) may reach although private (default: BERTH_OUTBOUND_ALLOW). */
  outboundAllow?: readonly string[];
  /** How outgoing requests resolve host names (default: the system resolver); tests map names to loopback. */
  outboundResolver?: Resolver;
  /** Where environments without a domain are served, `<name>-<8 hex>.<base domain>` (default: BERTH_BASE_DOMAIN; null: no generated names). */
  baseDomain?: string | null;
  /** DNS servers (ip or ip:port) domain claims are verified through (default: BERTH_DNS_SERVERS, else the system's). */
  dnsServers?: string[];
  /** The servers' reverse proxy, sent with every deploy (default: BERTH_PROXY_IMAGE, BERTH_ACME_CA, BERTH_ACME_CA_ROOT, BERTH_ACME_EMAIL). */
  proxy?: ProxySettings;
  /** Where uploaded backups are kept (default: BERTH_BACKUP_S3_* when set, else BERTH_BACKUP_DIR, else <data dir>/backups). */
  backupStore?: ObjectStore;
  /** Reads a stored migration backup (modules/migrations/analysis); tests of the upload flow give a fixed one. */
  analyzeBackup?: AnalyzeBackup;
  /** Where resumable migration uploads are assembled (default: BERTH_MIGRATION_UPLOAD_DIR, else <data dir>/migration-uploads). */
  migrationUploadDir?: string;
  /** Import-URL downloads: deadline (default 600 s) and extra trusted CA certificates (tests' local HTTPS servers). */
  migrationImport?: { timeoutMs?: number; ca?: string | Buffer };
  /** GET /metrics: off, on, or on behind a bearer token (default: BERTH_METRICS, BERTH_METRICS_TOKEN). Request and agent figures are gathered either way. */
  metrics?: { enabled: boolean; token: string | null };
  /** Where upload tiers begin (default: platform spec 4.3, 50 MB, 500 MB, 5 GB); tests lower them to send real parts of small files. */
  migrationTiers?: TierLimits;
  /**
   * When request validators and response serialisers are compiled: at start (default: a schema
   * that does not compile stops the server before it serves), or by the first request that
   * needs each (tests, which start hundreds of control planes and call a few routes of each).
   */
  schemas?: "at-start" | "on-first-use";
  /** Each organisation's migration backups at most (default: BERTH_MIGRATION_QUOTA_BYTES, 200 GiB). */
  migrationQuotaBytes?: number;
}

export type App = FastifyInstance & { services: Services; gateway: AgentGateway; maintenance: Maintenance; jobs: Jobs; hub: EventHub; drainState: DrainState; metrics: Metrics };

export async function buildApp(opts: AppOptions): Promise<App> {
  const clock = opts.clock ?? systemClock;
  const { db, pool } = opts.database;
  const trustProxy = opts.trustProxy ?? trustProxySetting() ?? false;
  const app = Fastify({
    logger: redactingLogger(opts.logger ?? false),
    // A number (hops) is valid at runtime; the HTTP/2 overload's type leaves it out.
    trustProxy: trustProxy as boolean,
    // X-Request-Id: believed from trusted proxies only (lib/request-id.ts), else a UUID; every
    // log line of a request carries it as reqId (Fastify's default label).
    requestIdHeader: false,
    genReqId: requestIdGenerator(trustProxy),
    // strictNumbers off: with it on, Ajv lets a query value of 1e309 (Infinity) past `maximum`
    // (found by the fuzz suite: ?limit=1e309 reached SQL as LIMIT Infinity).
    ajv: { customOptions: { removeAdditional: false, coerceTypes: "array", useDefaults: true, strictNumbers: false } },
    frameworkErrors,
    schemaController: {
      compilersFactory:
        opts.schemas === "on-first-use"
          ? { buildValidator: validatorsOnFirstUse(), buildSerializer: distinctSchemaSerializers({ onFirstUse: true }) }
          : { buildSerializer: distinctSchemaSerializers() },
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // The APIs speak JSON only: any other body is a 415, not a confusing validation error.
  app.removeContentTypeParser("text/plain");
  // An empty body with a JSON content type is treated as no body (curl -X POST -H ... is common).
  const defaultJson = app.getDefaultJsonParser("error", "error");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    if (body === "" || body === undefined) return done(null, undefined);
    return defaultJson(req, body as string, done);
  });

  installRequestIdHeader(app);
  const metrics = createMetrics();
  const drainState = createDrainState();
  installRequestMetrics(app, metrics);
  installErrorHandling(app);
  installRateLimitHook(app);
  await registerOpenApi(app);
  for (const schema of [ErrorBody, ...ERROR_BODIES.values(), Project, Server, Environment, Task, ActionResponse, Webhook, ApiKey, Backup, User]) app.addSchema(schema);

  const relaxed = createRelaxedDb(pool);
  const outbound = createRequestGuard({ allow: opts.outboundAllow ?? outboundAllowList(), ...(opts.outboundResolver ? { resolve: opts.outboundResolver } : {}) });
  const mailer = createMailer(opts.mail ?? mailSettings(), app.log);
  app.addHook("onClose", async () => mailer.close());
  // The jobs first: services queue their work from the start; startBackgroundWork defines what runs it.
  const jobs = await startJobs({ pool, ...(opts.jobs ? { options: opts.jobs } : {}), onError: (err) => app.log.warn({ err }, "background job failed"), onTryFailed: metrics.observe.jobFailed });
  const services = createServices({
    db,
    jobs,
    relaxedDb: relaxed.db,
    clock,
    cursorSecret: await instanceSecret(db, "cursor_secret"),
    masterKey: opts.masterKey,
    outbound,
    mailer,
    baseDomain: opts.baseDomain !== undefined ? opts.baseDomain : baseDomainSetting(),
    dnsServers: opts.dnsServers ?? dnsServersSetting(),
    proxy: opts.proxy ?? proxySettings(),
    ...(opts.backupStore ? { backupStore: opts.backupStore } : {}),
    ...(opts.analyzeBackup ? { analyzeBackup: opts.analyzeBackup } : {}),
    ...(opts.migrationUploadDir ? { migrationUploadDir: opts.migrationUploadDir } : {}),
    ...(opts.migrationTiers ? { migrationTiers: opts.migrationTiers } : {}),
    ...(opts.migrationQuotaBytes !== undefined ? { migrationQuotaBytes: opts.migrationQuotaBytes } : {}),
  });
  const gateway = await createAgentGateway({
    pool,
    repo: createLinkRepo(pool, relaxed.pool),
    commands: services.agentCommands,
    ingest: createEventIngest({ pool, announcePool: relaxed.pool, appliers: [applyDeploymentEvents, applyMigrationProgress, applyProxyState, createCaughtMailsApplier(() => clock.now())] }),
    replicaId: randomUUID(),
    heartbeatMs: opts.heartbeatMs ?? 15_000,
    ...(opts.outboxSweepMs ? { outboxSweepMs: opts.outboxSweepMs } : {}),
    limits: { ...agentLimitSettings(), ...opts.agentLimits },
    now: () => clock.now().getTime(),
    observe: { commandAccepted: metrics.observe.commandAccepted, eventsIngested: metrics.observe.eventsIngested, agentHandedOver: metrics.observe.agentHandedOver },
    log: app.log,
  });
  app.addHook("onClose", async () => {
    await gateway.close();
    await relaxed.close();
  });
  const background = await startBackgroundWork({ pool, clock, services, jobs, outbound, migrationImport: opts.migrationImport ?? {}, onError: (err) => app.log.warn({ err }, "background job failed"), onRetention: (run) => {
    metrics.observe.retentionRan(run, clock.now());
    if (run.dropped.length > 0 || run.deleted > 0 || run.commands > 0 || run.mails > 0) {
      app.log.info({ dropped: run.dropped, deleted: run.deleted, created: run.created, commands: run.commands, mails: run.mails }, "retention: expired months dropped, ended commands and expired mail deleted");
    }
  } });
  app.addHook("onClose", async () => background.stop(drainState.jobsGraceMs()));

  const hub = createEventHub({ pool, clock, log: app.log, stillAllowed: services.access.stillAllowed });
  // Before the server waits for open requests to finish: event streams never would.
  app.addHook("preClose", async () => hub.close());
  metrics.attach({
    agentsConnected: () => gateway.connectedCount(),
    agentStats: () => gateway.agentStats(),
    sseSubscribers: () => hub.subscriberCount(),
    draining: () => drainState.draining,
    pool: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    queueDepths: async () => new Map(await Promise.all(background.jobs.queueNames().map(async (q) => [q, await background.jobs.queueSize(q)] as [string, number]))),
  });
  const metricsAccess = opts.metrics ?? metricsSetting();
  if (metricsAccess.enabled) await app.register(metricsRoutes({ metrics, token: metricsAccess.token }));

  await app.register(healthRoutes({ pool, jobs: background.jobs, probeQueue: STUCK_SWEEP_QUEUE, draining: () => drainState.draining }));
  // Scoped so the WebSocket plugin's hooks run on the agent routes only, not on every API call.
  await app.register(async (agentScope) => {
    // Frames of 4 MiB at most; before its handshake ends, a link reads 64 KiB at most (link/admission.ts lowers it per socket).
    await agentScope.register(websocket, { options: { maxPayload: MAX_AGENT_FRAME_BYTES } });
    await agentScope.register(agentsRoutes({ enrollment: services.enrollment, gateway }));
    await agentScope.register(agentReleasesPlugin({ commands: services.agentCommands, signer: services.signer }));
  });
  // Agents' uploads and the signed download links: each request carries its own token.
  await app.register(backupTransferRoutes({ backups: services.backups }));
  await app.register(migrationArchiveRoutes({ archives: services.migrationArchives }));
  await app.register(publicApi({ pool, clock, services }), { prefix: PUBLIC_PREFIX });
  await app.register(platformApi({ clock, services, hub, streamLimits: createStreamLimits(opts.streamCaps), registration: opts.registration ?? registrationMode() }), { prefix: PLATFORM_PREFIX });
  await app.register(openApiRoutes);
  await app.register(dashboardRoutes());
  await app.register(docsRoutes());

  const maintenance = startMaintenance({
    tasks: [
      () => services.rateLimits.forgetOldWindows(),
      () => services.repos.idempotency.pruneExpired(clock.now()), () => services.chains.run(), () => services.dispatcher.failUndelivered(clock.now()), () => pruneOrgEvents(pool, clock.now()), () => hub.recheckAccess(),
    ],
    onError: (err) => app.log.warn({ err }, "maintenance failed"),
  });
  app.addHook("onClose", async () => maintenance.stop());

  return Object.assign(app, { services, gateway, maintenance, jobs: background.jobs, hub, drainState, metrics }) as unknown as App;
}
