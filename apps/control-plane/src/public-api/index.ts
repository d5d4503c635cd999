// The public API v1 (API keys): authentication and metering, idempotency, and the routes.
import type { FastifyInstance } from "fastify";
import type pg from "pg";
import type { Clock } from "../lib/clock.ts";
import type { Services } from "../services.ts";
import { apiKeysRoutes } from "../modules/api-keys/api-keys.routes.ts";
import { backupsRoutes } from "../modules/backups/backups.routes.ts";
import { copyFromPublicRoutes } from "../modules/environments/copy-from.routes.ts";
import { erpCredentialsRoutes } from "../modules/environments/erp-credentials.routes.ts";
import { deploymentsRoutes } from "../modules/deployments/public/deployments.routes.ts";
import { operationsRoutes } from "../modules/deployments/public/operations.routes.ts";
import { environmentsRoutes } from "../modules/environments/environments.routes.ts";
import { variablesPublicRoutes } from "../modules/environments/variables.routes.ts";
import { mailsPublicRoutes } from "../modules/mails/mails.routes.ts";
import { projectsRoutes } from "../modules/projects/projects.routes.ts";
import { serversRoutes } from "../modules/servers/servers.routes.ts";
import { webhooksRoutes } from "../modules/webhooks/webhooks.routes.ts";
import { webhookDeliveriesRoutes } from "../modules/webhooks/webhook-deliveries.routes.ts";
import { backupSchedulesPublicRoutes } from "../modules/backups/backup-schedules.routes.ts";
import { createApiKeyAuth } from "./api-key-auth.ts";
import { KEYS_CHANNEL } from "../modules/api-keys/key-cache.ts";
import { listen } from "../db/pg-listener.ts";
import { principalOf } from "../modules/api-keys/key-principal.ts";
import { createKeyTouches } from "../modules/api-keys/key-touches.ts";
import { createIdempotency } from "../modules/idempotency/idempotency.ts";
import { PUBLIC_PREFIX } from "./openapi.ts";
import { eventsPublicRoutes } from "../modules/events/events-public.routes.ts";
import { addonRepositoriesPublicRoutes } from "../modules/addon-repositories/addon-repositories.routes.ts";

export function publicApi(deps: { pool: pg.Pool; clock: Clock; services: Services }) {
  return async function (api: FastifyInstance) {
    const touches = createKeyTouches({ write: deps.services.repos.apiKeys.touchMany, onError: (err) => api.log.warn({ err }, "api key last_used_at not written") });
    api.addHook("onClose", async () => touches.flush());
    const authenticateFor = createApiKeyAuth({ repo: deps.services.repos.apiKeys, touches, clock: deps.clock, keys: deps.services.keyCache, limits: deps.services.rateLimits });
    // Keys revoked on another replica are forgotten here too.
    const revocations = await listen(deps.pool, [KEYS_CHANNEL], (_channel, keyId) => deps.services.keyCache.drop(keyId), (msg, err) => api.log.warn({ err }, msg));
    api.addHook("onClose", async () => revocations.close());
    const idempotency = createIdempotency({ repo: deps.services.repos.idempotency, clock: deps.clock, scopeOf: (r) => `api_key:${principalOf(r).keyId}` });
    api.decorateRequest("principal", null);
    api.decorateRequest("idempotencyClaim", null);
    // Every route authenticates first, with its own config at hand. Only POST honours an
    // idempotency key (rule 6), so only POST routes carry its hooks: the reads, the hottest
    // routes, run none.
    api.addHook("onRoute", (route) => {
      route.onRequest = [authenticateFor(route.config ?? {}), ...[route.onRequest ?? []].flat()];
      if (!(Array.isArray(route.method) ? route.method : [route.method]).includes("POST")) return;
      route.preHandler = [idempotency.preHandler, ...[route.preHandler ?? []].flat()];
      route.onSend = [idempotency.onSend, ...[route.onSend ?? []].flat()];
    });

    const s = deps.services;
    await api.register(projectsRoutes(s.projects));
    await api.register(serversRoutes({ servers: s.repos.servers, cursors: s.cursors, enrollment: s.enrollment }));
    await api.register(environmentsRoutes(s.environments));
    await api.register(variablesPublicRoutes(s.variables));
    await api.register(mailsPublicRoutes(s.mails));
    await api.register(deploymentsRoutes(s.deployments, PUBLIC_PREFIX));
    await api.register(operationsRoutes(s.deployments, PUBLIC_PREFIX));
    await api.register(backupsRoutes(s.backups, PUBLIC_PREFIX));
    await api.register(copyFromPublicRoutes(s.copyFrom, PUBLIC_PREFIX));
    await api.register(erpCredentialsRoutes(s.erpCredentials));
    await api.register(webhooksRoutes(s.webhooks));
    await api.register(webhookDeliveriesRoutes(s.webhookDeliveries));
    await api.register(apiKeysRoutes(s.apiKeys));
    await api.register(backupSchedulesPublicRoutes(s.backupSchedules));
    await api.register(eventsPublicRoutes({ tickets: s.streamTickets }));
    await api.register(addonRepositoriesPublicRoutes({ addonRepositories: s.addonRepositories, environments: s.repos.environments }));
  };
}
