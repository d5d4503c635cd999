// Public API routes for backups and restore (additions beyond the spec's public surface).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { originOf } from "../../lib/origin.ts";
import { keyActorOf, scopeOf } from "../api-keys/key-principal.ts";
import { ActionResponse } from "../deployments/public/deployments.routes.ts";
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
    storage: Nullable(
      Type.String({
        description:
          "Where the backup's files are kept besides its server: local (the control plane's backup directory) or s3 (its S3-compatible bucket); " +
          "null: only on its server (pre-deploy snapshots). A backup in the store can be downloaded and restored onto any environment of the organisation.",
      }),
    ),
    error_message: Nullable(Type.String()),
    created_at: Timestamp,
    completed_at: Nullable(Timestamp),
  },
  { $id: "Backup", title: "Backup" },
);
const BackupRef = refTo(Backup);

export const DownloadFile = Type.Object({
  name: Type.String({ description: "db.dump (pg_dump custom format), filestore.tar.gz (the data dir), manifest.json (sizes and SHA-256 of the others)" }),
  size_bytes: Type.Integer(),
  sha256: Type.String({ description: "SHA-256 of the file (hex), computed by the control plane as it received it; also sent as X-Checksum-Sha256" }),
  url: Type.String({ description: "GET: the file's bytes (Content-Length, Accept-Ranges: bytes, one Range per request answered 206)" }),
});

export const DOWNLOAD_DESCRIPTION =
  "A short-lived signed link to the backup's files, valid 15 minutes (`expires_at`) for anyone holding it, with no other credential: share it with care. " +
  "`url` answers the list of files as JSON; each file's `url` answers its bytes with Content-Length, `X-Checksum-Sha256` (and `Repr-Digest`) to check the download against, " +
  "and Range support (206 Partial Content; 416 range_not_satisfiable past the end) to resume. A link starts no new download once expired (410 download_link_expired); " +
  "an altered one is 403 download_link_invalid. 409 backup_in_progress while the backup is being made, backup_not_ready when it failed, backup_not_stored when its files are only on its server.";

export const DELETE_DESCRIPTION =
  "Removes the backup's files from the backup store, then its record. 409 backup_in_progress while it is being made; backup_not_deletable for a pre-deploy snapshot (its server keeps the newest few itself).";

export const DownloadLink = Type.Object({
  url: Type.String({ description: "GET: {backup_id, environment_id, created_at, files} as JSON" }),
  expires_at: Timestamp,
  files: Type.Array(DownloadFile),
});

const ActionResponseRef = refTo(ActionResponse);
const BackupParams = Type.Object({ id: Uuid, backup_id: Uuid });

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
        const { op, backupId } = await service.create(scopeOf(request), request.params.id, request.body ?? {}, keyActorOf(request));
        return reply.code(202).send({ ...accepted(op), backup_id: backupId });
      },
    );

    app.get(
      "/environments/:id/backups",
      { schema: { tags: ["Backups"], summary: "List backups", params: IdParams, querystring: PageQuery, response: { 200: Page(BackupRef), ...errors(404) } } },
      async (request) => service.list(scopeOf(request), request.params.id, request.query),
    );

    app.post(
      "/environments/:id/backups/:backup_id/download",
      {
        schema: {
          tags: ["Backups"],
          summary: "Get a download link",
          description: `${DOWNLOAD_DESCRIPTION} Needs a full-access key.`,
          params: BackupParams,
          response: { 200: DownloadLink, ...errors(404, 409) },
        },
      },
      async (request) => service.downloadLink(scopeOf(request), request.params.id, request.params.backup_id, originOf(request)),
    );

    app.delete(
      "/environments/:id/backups/:backup_id",
      {
        schema: {
          tags: ["Backups"],
          summary: "Delete a backup",
          description: `${DELETE_DESCRIPTION} Needs a full-access key.`,
          params: BackupParams,
          response: { 204: Type.Null(), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        await service.delete(scopeOf(request), request.params.backup_id, { environmentId: request.params.id });
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/environments/:id/restore",
      {
        schema: {
          tags: ["Backups"],
          summary: "Restore a backup",
          description:
            "Restores a completed backup of this environment, or of any environment of the organisation (possibly on another server) whose files are in the backup store: " +
            "the agent fetches them through a signed link when it does not have them. Checksums are verified before anything is touched; the database and file store are " +
            "replaced (into a new database, verified, then swapped). 404 for a backup of another organisation; 409 backup_not_ready unless the backup completed, backup_not_stored " +
            "for another environment's backup kept only on its server.",
          params: IdParams,
          body: Type.Object({ backup_id: Uuid }, { additionalProperties: false }),
          response: { 202: ActionResponseRef, ...errors(404, 409) },
        },
      },
      async (request, reply) =>
        reply.code(202).send(accepted(await service.restore(scopeOf(request), request.params.id, request.body.backup_id, keyActorOf(request)))),
    );
  };
}
