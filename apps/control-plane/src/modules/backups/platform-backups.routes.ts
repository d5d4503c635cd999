// Platform API routes for an environment's backups and restore (platform spec 4.1).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, PageQuery, Page, Uuid, refTo } from "../../lib/http-schemas.ts";
import { originOf } from "../../lib/origin.ts";
import { personOf } from "../auth/session-principal.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import { Backup, DELETE_DESCRIPTION, DOWNLOAD_DESCRIPTION, DownloadLink } from "./backups.routes.ts";
import { backupView, type BackupsService } from "./backups.service.ts";
import { DomainError } from "../../lib/errors.ts";

const BackupRef = refTo(Backup);
const EnvParams = Type.Object({ env_id: Uuid });
const BackupParams = Type.Object({ env_id: Uuid, backup_id: Uuid });

export function platformBackupsRoutes(deps: { backups: BackupsService; environments: Pick<DeploymentsService, "environmentScope">; heavy: DeploymentsService["heavy"] }): FastifyPluginAsyncTypebox {
  const inProgress = (err: unknown) => {
    if (err instanceof DomainError && err.code === "task_in_progress") throw new DomainError("deployment_in_progress", "Deployment already in progress");
    throw err;
  };
  return async (app) => {
    app.get(
      "/environments/:env_id/backups",
      { schema: { tags: ["Backups"], summary: "List backups", params: EnvParams, querystring: PageQuery, response: { 200: Page(BackupRef), ...errors(404) } } },
      async (request) => {
        const scope = await deps.environments.environmentScope(personOf(request), request.params.env_id, "project.backups.list");
        return deps.backups.list(scope, request.params.env_id, request.query);
      },
    );

    app.post(
      "/environments/:env_id/backups",
      {
        schema: {
          tags: ["Backups"],
          summary: "Back up an environment",
          description: "Starts a backup (database dump + file store, with SHA-256 checksums) on the environment's server; the record is pending until the agent reports.",
          params: EnvParams,
          body: Type.Object({ backup_type: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })), comment: Type.Optional(Type.String({ maxLength: 500 })) }, { additionalProperties: false }),
          response: { 201: BackupRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        const scope = await deps.environments.environmentScope(person, request.params.env_id, "project.backups.create");
        await deps.heavy(scope.organizationId);
        const { backupId } = await deps.backups.create(scope, request.params.env_id, request.body ?? {}, { userId: person.userId, apiKeyId: null }).catch(inProgress);
        const row = await deps.backups.get(scope, backupId);
        return reply.code(201).send(backupView(row));
      },
    );

    app.post(
      "/environments/:env_id/backups/:backup_id/download",
      {
        schema: { tags: ["Backups"], summary: "Get a download link", description: DOWNLOAD_DESCRIPTION, params: BackupParams, response: { 200: DownloadLink, ...errors(404, 409) } },
      },
      async (request) => {
        const scope = await deps.environments.environmentScope(personOf(request), request.params.env_id, "project.backups.download");
        return deps.backups.downloadLink(scope, request.params.env_id, request.params.backup_id, originOf(request));
      },
    );

    app.delete(
      "/environments/:env_id/backups/:backup_id",
      {
        schema: {
          tags: ["Backups"],
          summary: "Delete a backup",
          description: DELETE_DESCRIPTION,
          params: BackupParams,
          response: { 204: Type.Null(), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const scope = await deps.environments.environmentScope(personOf(request), request.params.env_id, "project.backups.delete");
        await deps.backups.delete(scope, request.params.backup_id, { environmentId: request.params.env_id });
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/environments/:env_id/restore",
      {
        schema: {
          tags: ["Backups"],
          summary: "Restore a backup",
          description:
            "Restores a completed backup (database and file store) of this environment, or of any environment of the organisation the caller may see, possibly on another server, " +
            "whose files are in the backup store (409 backup_not_stored otherwise). Returns the restore operation to follow.",
          params: EnvParams,
          body: Type.Object({ backup_id: Uuid }, { additionalProperties: false }),
          response: { 202: Type.Object({ message: Type.String(), deployment_id: Uuid, backup_id: Uuid, status: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        const scope = await deps.environments.environmentScope(person, request.params.env_id, "project.backups.restore");
        await deps.heavy(scope.organizationId);
        const op = await deps.backups.restore(scope, request.params.env_id, request.body.backup_id, { userId: person.userId, apiKeyId: null }).catch(inProgress);
        return reply.code(202).send({ message: "Restore started", deployment_id: op.id, backup_id: request.body.backup_id, status: op.status });
      },
    );
  };
}
