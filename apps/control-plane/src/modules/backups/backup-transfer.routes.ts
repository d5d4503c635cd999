// The routes that move a backup's bytes, outside the APIs' authentication (each request
// carries its own signed token, backup-links.ts), mounted at the root by app.ts:
//
//   PUT /agent/v1/backups/{id}/files/{name}   the agent uploads a file of a pending backup;
//        Authorization: Bearer bku_…, Content-Length, X-Checksum-Sha256 (what it declares).
//        200 {name, size, sha256} once stored and recorded; 422 upload_checksum_mismatch (not
//        kept), 401 upload_token_invalid, 409 backup_upload_closed.
//   GET /downloads/backups/{token}            the backup's files as JSON, each with its link
//   GET /downloads/backups/{token}/{name}     the file's bytes: Content-Length, X-Checksum-Sha256,
//        Accept-Ranges, one Range (206 with Content-Range; 416 past the end)
//
// Expired links answer 410 download_link_expired, altered ones 403 download_link_invalid.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../lib/errors.ts";
import { ErrorBody, refTo } from "../../lib/http-schemas.ts";
import { originOf } from "../../lib/origin.ts";
import { DOWNLOAD_PATH } from "./backup-links.ts";
import { BACKUP_FILE_NAME, type BackupsService } from "./backups.service.ts";
import { DownloadFile } from "./backups.routes.ts";

const Sha256 = Type.String({ pattern: "^[0-9a-f]{64}$" });
const FileName = Type.String({ pattern: BACKUP_FILE_NAME.source, maxLength: 64 });
const Binary = Type.Unsafe<unknown>({ type: "string", format: "binary" });
const err = refTo(ErrorBody);

export function backupTransferRoutes(deps: { backups: BackupsService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    // The upload's body is streamed to the store as it arrives: never parsed, never buffered.
    app.addContentTypeParser("application/octet-stream", (_request, payload, done) => done(null, payload));

    app.put(
      "/agent/v1/backups/:id/files/:name",
      {
        // Whatever its size: the body is a stream, the store measures it against Content-Length.
        bodyLimit: Number.MAX_SAFE_INTEGER,
        schema: {
          hide: true,
          params: Type.Object({ id: Type.String({ format: "uuid" }), name: FileName }),
          headers: Type.Object({ "content-length": Type.String({ pattern: "^[0-9]{1,15}$" }), "x-checksum-sha256": Sha256 }),
          response: { 200: Type.Object({ name: Type.String(), size: Type.Integer(), sha256: Sha256 }), 401: err, 409: err, 422: err },
        },
      },
      async (request) => {
        const auth = /^Bearer (\S+)$/.exec(request.headers.authorization ?? "");
        if (!auth) throw new DomainError("upload_token_invalid", "An upload needs Authorization: Bearer <the backup command's upload token>");
        if (request.headers["content-type"] !== "application/octet-stream") {
          throw new DomainError("unsupported_media_type", "A backup file is uploaded as application/octet-stream");
        }
        const declared = { name: request.params.name, size: Number(request.headers["content-length"]), sha256: request.headers["x-checksum-sha256"] };
        return deps.backups.receiveFile(auth[1]!, request.params.id, request.params.name, declared, request.body as NodeJS.ReadableStream);
      },
    );

    app.get(
      `${DOWNLOAD_PATH}/:token`,
      { schema: { hide: true, params: Type.Object({ token: Type.String() }), response: { 200: Type.Object({ backup_id: Type.String(), environment_id: Type.String(), created_at: Type.String(), files: Type.Array(DownloadFile) }), 403: err, 404: err, 409: err, 410: err } } },
      async (request, reply) => {
        const index = await deps.backups.downloadIndex(request.params.token, originOf(request));
        return reply.header("cache-control", "private, no-store").send(index);
      },
    );

    app.get(
      `${DOWNLOAD_PATH}/:token/:name`,
      { schema: { hide: true, params: Type.Object({ token: Type.String(), name: Type.String({ maxLength: 64 }) }), response: { 200: Binary, 206: Binary, 403: err, 404: err, 409: err, 410: err, 416: err } } },
      async (request, reply) => {
        const { file, body, range } = await deps.backups.openFile(request.params.token, request.params.name, request.headers.range);
        reply
          .header("content-type", "application/octet-stream")
          .header("content-disposition", `attachment; filename="${file.name}"`)
          .header("accept-ranges", "bytes")
          // The whole file's digest, also on a partial answer: check it once every range arrived.
          .header("x-checksum-sha256", file.sha256)
          .header("repr-digest", `sha-256=:${Buffer.from(file.sha256, "hex").toString("base64")}:`)
          .header("cache-control", "private, no-store");
        if (range) {
          return reply
            .code(206)
            .header("content-range", `bytes ${range.start}-${range.end}/${file.size}`)
            .header("content-length", range.end - range.start + 1)
            .send(body);
        }
        return reply.header("content-length", file.size).send(body);
      },
    );
  };
}
