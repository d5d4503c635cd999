// Platform API routes of what a migration's analysis found (platform spec 4.3): the analysis
// with the target's requirements, and the servers with room for its recommendation.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, refTo } from "../../../lib/http-schemas.ts";
import { personOf } from "../../auth/session-principal.ts";
import type { MigrationAccess } from "../record/migration-access.ts";
import { Analysis, AvailableServer, MigrationParams, MIGRATIONS_TAG } from "../record/migration-schemas.ts";
import type { FindingsService } from "./findings.service.ts";

export function findingsRoutes(deps: { findings: FindingsService; access: MigrationAccess }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/migrations/:migration_id/analysis",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Get the analysis of the backup",
          description:
            "What the analysis read from the stored backup (409 migration_not_analyzed before it finished), and `requirements`: what the environment it creates must have, compared with the target at this request (the database image's PostgreSQL against postgres_major_required; the Enterprise add-ons when enterprise_modules is not empty). start refuses with a requirement's code while it is not met.",
          params: MigrationParams,
          response: { 200: refTo(Analysis), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.list");
        return deps.findings.analysis(org, request.params.migration_id);
      },
    );

    app.get(
      "/migrations/:migration_id/available-vms",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Servers that fit the recommendation",
          description: "The organisation's servers with room for the analysis' recommended CPU, RAM and disk, from what their environments were given and their live figures (409 migration_not_analyzed before the analysis).",
          params: MigrationParams,
          response: { 200: Type.Array(AvailableServer), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.list");
        return deps.findings.availableServers(org, request.params.migration_id);
      },
    );
  };
}
