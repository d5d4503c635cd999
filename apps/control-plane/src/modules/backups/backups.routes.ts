// Public API routes for backups and restore (additions beyond the spec's public surface).
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { principalOf, scopeOf } from "../api-keys/key-principal.ts";
import { ActionResponse } from "../deployments/deployments.routes.ts";
import type { BackupsService } from "./backups.service.ts";

export const Backup = Type.Object(
  {
    id: Uuid,
    environment_id: Uuid,
    task_id: Uuid,
    backup_type: Type.String(),
    comment: Nullable(Type.String()),
    status: Type.String({ description: "pending, completed or failed" }),
    size_bytes: Nullable(Type.Integer()),
    files: Type.Array(Type.Object({ name: Type.String(), size: Type.Integer(), sha256: Type.String() })),
    error_message: Nullable(Type.String()),
    created_at: Timestamp,
    completed_at: Nullable(Timestamp),
  },
  { $id: "Backup", title: "Backup" },
);
const BackupRef = Type.Ref(Backup) as unknown as typeof Backup;
const ActionResponseRef = Type.Ref(ActionResponse) as unknown as typeof ActionResponse;

export function backupsRoutes(service: BackupsService, publicPrefix: string): FastifyPluginAsyncTypebox {
  const accepted = (task: { id: string; environmentId: string }) => ({
    task_id: task.id,
    status: "queued" as const,
    environment_id: task.environmentId,
    poll_url: `${publicPrefix}/deployments/${task.id}`,
  });
  return async (app) => {
    app.post(
      "/environments/:id/backups",
      {
        schema: {
          tags: ["Backups"],
          summary: "Back up an environment",
          description: "Database dump and file store, with SHA-256 checksums. 202 with a task to poll and the backup's id. Needs a full-access key.",
          params: IdParams,
          body: Type.Optional(
            Type.Object(
              { backup_type: Type.Optional(Type.String({ minLength: 1, maxLength: 32, default: "manual" })), comment: Type.Optional(Type.String({ maxLength: 500 })) },
              { additionalProperties: false },
            ),
          ),
          response: { 202: Type.Object({ ...ActionResponse.properties, backup_id: Uuid }), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const { op, backupId } = await service.create(scopeOf(request), request.params.id, request.body ?? {}, { userId: null, apiKeyId: principalOf(request).keyId });
        return reply.code(202).send({ ...accepted(op), backup_id: backupId });
      },
    );

    app.get(
      "/environments/:id/backups",
      { schema: { tags: ["Backups"], summary: "List backups", params: IdParams, querystring: PageQuery, response: { 200: Page(BackupRef), ...errors(404) } } },
      async (request) => service.list(scopeOf(request), request.params.id, request.query),
    );

    app.post(
      "/environments/:id/restore",
      {
        schema: {
          tags: ["Backups"],
          summary: "Restore a backup",
          description: "Checksums are verified before anything is touched; the database and file store are replaced. 409 backup_not_ready unless the backup completed.",
          params: IdParams,
          body: Type.Object({ backup_id: Uuid }, { additionalProperties: false }),
          response: { 202: ActionResponseRef, ...errors(404, 409) },
        },
      },
      async (request, reply) =>
        reply.code(202).send(accepted(await service.restore(scopeOf(request), request.params.id, request.body.backup_id, { userId: null, apiKeyId: principalOf(request).keyId }))),
    );
  };
}
