// The platform API v1 (session tokens): people and permissions, the deployment lifecycle,
// live events, the git push hook. Mounted at /api/v1.
import type { FastifyInstance } from "fastify";
import type { Clock } from "../lib/clock.ts";
import type { Services } from "../services.ts";
import { authRoutes } from "../modules/auth/auth.routes.ts";
import { organizationsRoutes } from "../modules/organizations/organizations.routes.ts";
import { apiKeysPlatformRoutes } from "../modules/api-keys/platform.routes.ts";
import { createSessionAuth } from "./session-auth.ts";
import { gitHooksRoutes } from "../modules/git-hooks/git-hooks.routes.ts";
import { eventsRoutes } from "../modules/events/events.routes.ts";
import type { EventHub } from "../modules/events/event-hub.ts";
import type { StreamLimits } from "../modules/events/stream-limits.ts";
import { invitationsRoutes } from "../modules/invitations/platform.routes.ts";
import type { RegistrationMode } from "../config.ts";
import { supportRoutes } from "../modules/support/support.routes.ts";
import { installPortalAudit } from "../modules/support/portal-audit.ts";
import { serversPlatformRoutes } from "../modules/servers/platform.routes.ts";
import { projectsPlatformRoutes } from "../modules/projects/platform.routes.ts";
import { webhooksPlatformRoutes } from "../modules/webhooks/platform.routes.ts";
import { environmentsPlatformRoutes } from "../modules/environments/platform.routes.ts";
import { variablesPlatformRoutes } from "../modules/environments/variables.routes.ts";
import { mailsPlatformRoutes } from "../modules/mails/mails.routes.ts";
import { platformDeploymentsRoutes } from "../modules/deployments/platform/platform-deployments.routes.ts";
import { platformBackupsRoutes } from "../modules/backups/platform-backups.routes.ts";
import { copyFromPlatformRoutes } from "../modules/environments/copy-from.routes.ts";
import { platformErpCredentialsRoutes } from "../modules/environments/erp-credentials.routes.ts";
import { backupSchedulesPlatformRoutes } from "../modules/backups/backup-schedules.routes.ts";
import { personOf } from "../modules/auth/session-principal.ts";
import { addonRepositoriesPlatformRoutes } from "../modules/addon-repositories/addon-repositories.routes.ts";
import { migrationsRoutes } from "../modules/migrations/migrations.routes.ts";

export const PLATFORM_PREFIX = "/api/v1";

export interface PlatformDeps {
  clock: Clock;
  services: Services;
  hub: EventHub;
  streamLimits: StreamLimits;
  registration: RegistrationMode;
}

export function platformApi(deps: PlatformDeps) {
  return async function (api: FastifyInstance) {
    const s = deps.services;
    api.decorateRequest("person", null);
    api.addHook("onRequest", createSessionAuth(s.sessions));
    installPortalAudit(api, { audit: s.audit, log: api.log });
    await api.register(authRoutes({ sessions: s.sessions, invitations: s.invitations, registration: deps.registration, access: s.access, limits: s.rateLimits }));
    await api.register(invitationsRoutes({ invitations: s.invitations, access: s.access, limits: s.rateLimits }));
    await api.register(organizationsRoutes({ memberships: s.memberships, access: s.access }));
    await api.register(apiKeysPlatformRoutes({ apiKeys: s.apiKeys, access: s.access }));
    await api.register(gitHooksRoutes({ gitHooks: s.gitHooks, access: s.access, limits: s.rateLimits }));
    await api.register(eventsRoutes({ hub: deps.hub, access: s.access, clock: deps.clock, tickets: s.streamTickets, limits: deps.streamLimits }));
    await api.register(supportRoutes({ support: s.support, audit: s.audit, access: s.access }));
    await api.register(platformDeploymentsRoutes(s.deployments));
    await api.register(platformBackupsRoutes({ backups: s.backups, environments: s.deployments, heavy: s.deployments.heavy }));
    await api.register(copyFromPlatformRoutes({ copy: s.copyFrom, deployments: s.deployments }));
    await api.register(
      platformErpCredentialsRoutes({
        credentials: s.erpCredentials,
        scopeFor: (request, environmentId) => s.deployments.environmentScope(personOf(request), environmentId, "project.environments.update"),
      }),
    );
    await api.register(serversPlatformRoutes({ servers: s.repos.servers, enrollment: s.enrollment, access: s.access, clock: deps.clock }));
    await api.register(projectsPlatformRoutes({ access: s.access, environments: s.repos.environments, addresses: s.addresses, projects: s.projects, environmentsService: s.environments }));
    await api.register(webhooksPlatformRoutes({ webhooks: s.webhooks, access: s.access }));
    await api.register(environmentsPlatformRoutes({ environments: s.repos.environments, environmentsService: s.environments, deployments: s.deployments, access: s.access }));
    await api.register(variablesPlatformRoutes({ variables: s.variables, access: s.access }));
    await api.register(mailsPlatformRoutes({ mails: s.mails, environments: s.deployments }));
    await api.register(backupSchedulesPlatformRoutes({ schedules: s.backupSchedules, environments: s.deployments }));
    await api.register(addonRepositoriesPlatformRoutes({ addonRepositories: s.addonRepositories, access: s.access, environments: s.repos.environments }));
    await api.register(migrationsRoutes({ migrations: s.migrations }));
  };
}
