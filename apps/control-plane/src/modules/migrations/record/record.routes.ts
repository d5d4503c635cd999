// Platform API routes of a migration's record (platform spec 4.3): create, list, read,
// configure, cancel, retry and delete. Authorised through migration-access.ts.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, StringEnum, Uuid, refTo } from "../../../lib/http-schemas.ts";
import { personOf } from "../../auth/session-principal.ts";
import type { MigrationAccess } from "./migration-access.ts";
import { ConfigureBody, CreateMigrationBody, Migration, MigrationParams, MIGRATIONS_TAG, StatusAnswer } from "./migration-schemas.ts";
import { MIGRATION_STATUSES } from "./migration-states.ts";
import type { RecordService } from "./record.service.ts";

const MigrationRef = refTo(Migration);

export function recordRoutes(deps: { record: RecordService; access: MigrationAccess }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/migrations",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Create a migration",
          description: "Starts moving an existing ERP in: the record is pending until a backup is uploaded (upload/init) or imported (import-url). data_processing_consent must be true (400 consent_required).",
          body: CreateMigrationBody,
          response: { 201: MigrationRef, ...errors(404) },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        await deps.access.requireOrg(person, request.body.organization_id, "org.migrations.create");
        const row = await deps.record.create(request.body.organization_id, { ...request.body, source_type: request.body.source_type as string }, { userId: person.userId });
        return reply.code(201).send(await deps.record.view(row));
      },
    );

    app.get(
      "/migrations",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "List migrations",
          description: "The organisation's migrations, newest first, by page.",
          querystring: Type.Object(
            {
              organization_id: Uuid,
              status: Type.Optional(StringEnum(MIGRATION_STATUSES)),
              page: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 }),
              page_size: Type.Integer({ minimum: 1, maximum: 100, default: 20 }),
            },
            { additionalProperties: false },
          ),
          response: { 200: Type.Object({ items: Type.Array(MigrationRef), total: Type.Integer(), page: Type.Integer(), page_size: Type.Integer(), pages: Type.Integer() }), ...errors(404) },
        },
      },
      async (request) => {
        await deps.access.requireOrg(personOf(request), request.query.organization_id, "org.migrations.list");
        return deps.record.list(request.query.organization_id, { ...request.query, status: request.query.status as string | undefined });
      },
    );

    app.get(
      "/migrations/:migration_id",
      { schema: { tags: MIGRATIONS_TAG, summary: "Get a migration", params: MigrationParams, response: { 200: MigrationRef, ...errors(404) } } },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.list");
        return deps.record.view(await deps.record.get(org, request.params.migration_id));
      },
    );

    app.post(
      "/migrations/:migration_id/configure",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Configure a migration",
          description: "Chooses the target server (one of the organisation's, 400 server_not_found otherwise), domain and repository once the backup is analysed (409 migration_not_configurable before). The answer is the migration, now ready to start.",
          params: MigrationParams,
          body: ConfigureBody,
          response: { 200: MigrationRef, ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        return deps.record.view(await deps.record.configure(org, request.params.migration_id, request.body));
      },
    );

    app.post(
      "/migrations/:migration_id/cancel",
      {
        schema: { tags: MIGRATIONS_TAG, summary: "Cancel a migration", description: "Any migration not completed, cancelled or unlinked (409 migration_not_cancellable). An unfinished upload is discarded at once; stored bytes by the cleanup job. A running migration's deployment is cancelled: its agent stops at the next step and puts back what the restore had replaced.", params: MigrationParams, response: { 200: StatusAnswer, ...errors(404, 409) } },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        const row = await deps.record.cancel(org, request.params.migration_id, { userId: personOf(request).userId });
        return { status: row.status, migration_id: row.id, message: "Migration cancelled" };
      },
    );

    app.post(
      "/migrations/:migration_id/retry",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Retry a failed migration",
          description: "Only a failed migration (409 migration_not_retryable). retry_count goes up; a stored backup whose analysis failed is analysed again (status uploading, current_step analyzing); an analysed one becomes ready (start again); one whose backup never arrived goes back to pending.",
          params: MigrationParams,
          response: { 200: Type.Object({ ...StatusAnswer.properties, retry_count: Type.Integer() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        const row = await deps.record.retry(org, request.params.migration_id);
        return { status: row.status, migration_id: row.id, message: row.currentStep === "analyzing" ? "Analysis started again" : "Migration reset", retry_count: row.retryCount };
      },
    );

    app.delete(
      "/migrations/:migration_id",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Delete a migration",
          description: "Deletes the record and the backup's bytes in the backup store (and an unfinished upload). Refused while it runs (409 migration_in_progress).",
          params: MigrationParams,
          response: { 200: Type.Object({ migration_id: Uuid, deleted: Type.Boolean(), storage_deleted: Type.Boolean(), message: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.delete");
        const out = await deps.record.delete(org, request.params.migration_id);
        return { migration_id: request.params.migration_id, deleted: true, storage_deleted: out.storage_deleted, message: "Migration deleted" };
      },
    );
  };
}
