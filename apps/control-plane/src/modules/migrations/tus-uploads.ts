// The resumable upload tiers (tier_2 and up): the tus protocol 1.0 (creation, termination)
// through @tus/server, its chunks written to a folder of this replica (@tus/file-store). A
// client that loses its connection asks HEAD for Upload-Offset and sends PATCH from there.
// When the last byte arrives, the file is streamed into the backup store through the
// integrity check (migrations.service receive) and the tus file removed; a mismatch answers
// 422 with the error body and keeps nothing.
//
// URLs: POST {prefix}/{migration_id}/upload/tus creates the upload (Upload-Length must be the
// size given to upload/init; Upload-Metadata may carry filename and sha256); the upload is
// {prefix}/{migration_id}/upload/tus/{upload_id} (HEAD, PATCH, DELETE). Upload ids are
// "<migration id>.<32 hex>". The lock between concurrent PATCHes of one upload is in
// memory: one replica serves an upload (uploads are sticky to the replica holding the file).
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { rm } from "node:fs/promises";
import path from "node:path";
import { Server, EVENTS } from "@tus/server";
import { FileStore } from "@tus/file-store";
import { DomainError } from "../../lib/errors.ts";
import type { MigrationsService } from "./migrations.service.ts";

// Types of the raw request and response tus handles (node:http is imported for its types only: requests go out through the request guard).
type IncomingMessage = import("node:http").IncomingMessage;
type ServerResponse = import("node:http").ServerResponse;

export const UPLOAD_ID = /^[0-9a-f-]{36}\.[0-9a-f]{32}$/;

export function createTusUploads(deps: { dir: string; prefix: string; migrations: () => Pick<MigrationsService, "noteUploadId" | "noteProgress" | "receive">; byId: (id: string) => Promise<Parameters<MigrationsService["receive"]>[0] | undefined> }) {
  // Made on first use: the file store creates its folder, which a control plane that never
  // receives a resumable upload (scripts, most tests) should not leave behind.
  let made: { server: Server; datastore: FileStore } | null = null;
  const tus = () => (made ??= make());
  const migrationOf = (uploadId: string) => uploadId.slice(0, 36);
  const idFromUrl = (url: string) => /\/upload\/tus\/([^/?#]+)/.exec(url)?.[1];

  function make() {
    const datastore = new FileStore({ directory: deps.dir });
    const server = new Server({
      path: deps.prefix,
      datastore,
      // Progress (bytes_received, migration_progress) at most once a second per upload.
      postReceiveInterval: 1000,
      // The upload URL is absolute on the origin the client used (Host, and X-Forwarded-* are ignored).
      generateUrl: (_req, { proto, host, id }) => `${proto}://${host}${deps.prefix}/${migrationOf(id)}/upload/tus/${id}`,
      getFileIdFromRequest: (req) => {
        const id = idFromUrl(req.url);
        return id && UPLOAD_ID.test(id) ? id : undefined;
      },
      namingFunction: (req) => {
        const m = /\/([0-9a-f-]{36})\/upload\/tus\/?(?:[?#]|$)/.exec(req.url);
        if (!m) throw { status_code: 404, body: JSON.stringify({ error: "not_found", message: "Migration not found" }) };
        return `${m[1]}.${randomBytes(16).toString("hex")}`;
      },
      async onUploadCreate(_req, upload) {
        await deps.migrations().noteUploadId(migrationOf(upload.id), upload.id);
        return {};
      },
      async onUploadFinish(_req, upload) {
        const m = await deps.byId(migrationOf(upload.id));
        const file = path.join(deps.dir, upload.id);
        try {
          if (!m || m.uploadId !== upload.id) throw new DomainError("migration_not_uploadable", "This upload was replaced or cancelled; nothing was kept");
          const row = await deps.migrations().receive(m, createReadStream(file, { highWaterMark: 1 << 20 }), { size: upload.size ?? upload.offset, sha256: upload.metadata?.sha256 ?? null });
          return { status_code: 204, headers: { "x-migration-status": row.status, "x-checksum-sha256": row.storedSha256 ?? "" } };
        } catch (error) {
          if (error instanceof DomainError) {
            const status = error.code === "upload_checksum_mismatch" ? 422 : error.code === "checksum_required" ? 400 : 409;
            throw { status_code: status, body: JSON.stringify({ error: error.code, message: error.message }) };
          }
          throw error;
        } finally {
          await datastore.remove(upload.id).catch(() => undefined);
        }
      },
    });
    server.on(EVENTS.POST_RECEIVE, (_req, upload) => {
      void deps.migrations().noteProgress(migrationOf(upload.id), upload.offset).catch(() => undefined);
    });
    return { server, datastore };
  }

  return {
    /** Hands a tus request (already authorised by the route) to the tus server. */
    handle: (req: IncomingMessage, res: ServerResponse) => tus().server.handle(req, res),
    dir: deps.dir,
    migrationOf,
    /** Removes an unfinished upload's file and its metadata; none there is no error. */
    async discard(uploadId: string): Promise<void> {
      if (!UPLOAD_ID.test(uploadId)) return;
      if (made) await made.datastore.remove(uploadId).catch(() => undefined);
      await rm(path.join(deps.dir, uploadId), { force: true });
      await rm(path.join(deps.dir, `${uploadId}.json`), { force: true });
    },
  };
}
export type TusUploads = ReturnType<typeof createTusUploads>;
