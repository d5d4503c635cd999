// Platform API routes of a migration's run (platform spec 4.3): start the 12 steps, and
// unlink the environment they made.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Uuid } from "../../../lib/http-schemas.ts";
import { personOf } from "../../auth/session-principal.ts";
import type { MigrationAccess } from "../record/migration-access.ts";
import { MigrationParams, MIGRATIONS_TAG, StatusAnswer } from "../record/migration-schemas.ts";
import type { ExecutionService } from "./execution.service.ts";

export function executionRoutes(deps: { execution: ExecutionService; access: MigrationAccess }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/migrations/:migration_id/start",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Start a migration",
          description:
            "Runs the 12 steps on the target server (202): 1 a project named after the migration on the target server, with the detected ERP version and the repository; 2 an environment linked by migration_id, sized by the recommendation, at target_domain (`production` when configured so, else `staging`); 3 to 12 that environment's first deployment (trigger `migration`), which restores the backup because of the restore-once rule (platform spec 4.1 rule 9). Follow it with GET (steps, progress_percent, current_step) or the migration_progress events; a failure fails the migration with error_message (retry, then start again: the project and environment are reused). 409 migration_not_ready unless configured (ready); 409 enterprise_addons_required or database_image_too_old, with nothing made, while a requirement of GET analysis is not met (its message says what to do; start again once it is).",
          params: MigrationParams,
          response: { 202: StatusAnswer, ...errors(400, 404, 409) },
        },
      },
      async (request, reply) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.execute");
        return reply.code(202).send(await deps.execution.start(org, request.params.migration_id, personOf(request)));
      },
    );

    app.post(
      "/migrations/:migration_id/unlink-environment",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Unlink the migrated environment",
          description:
            "Destroys the environment the migration created, with its database and data (a destroy operation on its server), and returns the migration to analyzed: configure and start it again. The answer's status is `unlinked`. 409 migration_not_linked when it has none, migration_in_progress while it runs.",
          params: MigrationParams,
          response: { 200: Type.Object({ status: Type.String(), migration_id: Uuid, environment_deleted: Type.Boolean(), message: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        return deps.execution.unlink(org, request.params.migration_id, personOf(request));
      },
    );
  };
}
