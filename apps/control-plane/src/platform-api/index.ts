// The platform API v1 (session tokens): people and permissions, the deployment lifecycle,
// live events, the git push hook. Mounted at /api/v1.
import type { FastifyInstance } from "fastify";
import type pg from "pg";
import type { Database } from "@berth/db";
import type { Clock } from "../lib/clock.ts";
import type { Services } from "../services.ts";
import { authRoutes } from "../modules/auth/auth.routes.ts";
import { organizationsRoutes } from "../modules/organizations/organizations.routes.ts";
import { createSessionAuth } from "./session-auth.ts";
import { gitHooksRoutes } from "../modules/git-hooks/git-hooks.routes.ts";
import { eventsRoutes } from "../modules/events/events.routes.ts";
import { supportRoutes } from "../modules/support/support.routes.ts";
import { dashboardApiRoutes } from "../modules/dashboard/dashboard-api.routes.ts";
import { createPlatformDeployments } from "../modules/deployments/platform-deployments.service.ts";
import { platformDeploymentsRoutes } from "../modules/deployments/platform-deployments.routes.ts";
import { platformBackupsRoutes } from "../modules/backups/platform-backups.routes.ts";

export const PLATFORM_PREFIX = "/api/v1";

export interface PlatformDeps {
  db: Database;
  pool: pg.Pool;
  clock: Clock;
  services: Services;
}

export function platformApi(deps: PlatformDeps) {
  return async function (api: FastifyInstance) {
    api.decorateRequest("person", null);
    api.addHook("onRequest", createSessionAuth(deps.services.sessions));
    await api.register(authRoutes({ sessions: deps.services.sessions, db: deps.db, pool: deps.pool, clock: deps.clock, limits: deps.services.rateLimits }));
    await api.register(organizationsRoutes(deps));
    await api.register(gitHooksRoutes(deps));
    await api.register(eventsRoutes(deps));
    await api.register(supportRoutes(deps));
    const s = deps.services;
    const deployments = createPlatformDeployments({ db: deps.db, pool: deps.pool, clock: deps.clock, limits: s.rateLimits, access: s.access, repo: s.repos.deployments, operations: s.deployments });
    await api.register(platformDeploymentsRoutes(deployments));
    await api.register(platformBackupsRoutes({ backups: s.backups, deployments }));
    await api.register(dashboardApiRoutes(deps));
  };
}
