// GET /downloads/migrations/{token}/{name}: a migration's stored backup for the agent whose
// deploy restores it, outside the APIs' authentication (the signed token is the capability,
// migration-archive.ts), mounted at the root by app.ts. Content-Length, X-Checksum-Sha256,
// Accept-Ranges and one Range (206 with Content-Range; 416 past the end), as the backup
// downloads; 410 download_link_expired, 403 download_link_invalid.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { ErrorBody, refTo } from "../../../lib/http-schemas.ts";
import { MIGRATION_DOWNLOAD_PATH, type MigrationArchives } from "./migration-archive.ts";

const Binary = Type.Unsafe<unknown>({ type: "string", format: "binary" });
const err = refTo(ErrorBody);

export function migrationArchiveRoutes(deps: { archives: MigrationArchives }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      `${MIGRATION_DOWNLOAD_PATH}/:token/:name`,
      { schema: { hide: true, params: Type.Object({ token: Type.String(), name: Type.String({ maxLength: 64 }) }), response: { 200: Binary, 206: Binary, 403: err, 404: err, 410: err, 416: err } } },
      async (request, reply) => {
        const file = await deps.archives.open(request.params.token, request.params.name, request.headers.range);
        reply
          .header("content-type", "application/octet-stream")
          .header("accept-ranges", "bytes")
          .header("x-checksum-sha256", file.sha256)
          .header("cache-control", "private, no-store");
        if (file.range) {
          return reply
            .code(206)
            .header("content-range", `bytes ${file.range.start}-${file.range.end}/${file.size}`)
            .header("content-length", file.range.end - file.range.start + 1)
            .send(file.body);
        }
        return reply.header("content-length", file.size).send(file.body);
      },
    );
  };
}
