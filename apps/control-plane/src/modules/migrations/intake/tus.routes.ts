// The resumable upload routes (tus 1.0, tiers 2 to 4): authorised here, then handed to the
// tus server (tus-uploads.ts) as raw Node request and response. Around it: the answer of an
// upload whose backup arrived (HEAD: complete), the concatenation's final request, and the
// checks of a creation (its length, the organisation's quota; a new upload replaces the
// migration's unfinished one, a part counts against the parts' bounds).
import { Type } from "typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../../../lib/errors.ts";
import { errors, Uuid } from "../../../lib/http-schemas.ts";
import { originOf } from "../../../lib/origin.ts";
import { hijack } from "../../../lib/request-id.ts";
import { personOf } from "../../auth/session-principal.ts";
import type { MigrationAccess } from "../record/migration-access.ts";
import { MigrationParams, MIGRATIONS_TAG } from "../record/migration-schemas.ts";
import type { IntakeService } from "./intake.service.ts";
import { notThisUpload, type TusUploads } from "./tus-uploads.ts";
import type { UploadQuota } from "./upload-quota.ts";

type TusRequest = FastifyRequest<{ Params: { migration_id: string; upload_id?: string } }>;

export function registerTusRoutes(app: FastifyInstance, deps: { intake: Pick<IntakeService, "resumable">; quota: Pick<UploadQuota, "check">; tus: TusUploads; access: MigrationAccess }): void {
  // The migration's state is read inside serve(): a cancel meanwhile leaves the files to this request until it is answered.
  const tusRoute = async (request: TusRequest, reply: FastifyReply) => {
    const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
    return deps.tus.serve(request.params.migration_id, () => tusRequest(org, request, reply));
  };
  const tusRequest = async (org: string, request: TusRequest, reply: FastifyReply) => {
    const id = request.params.upload_id;
    const { m, finished } = await deps.intake.resumable(org, request.params.migration_id, id, ["tier_2", "tier_3", "tier_4"]);
    // An upload whose backup arrived: HEAD says complete (offset = length); nothing more goes to it.
    if (finished) {
      if (request.method !== "HEAD") throw new DomainError("not_found", "This upload is finished: its backup was received (HEAD answers Upload-Offset equal to Upload-Length)");
      return reply
        .code(200)
        .header("tus-resumable", "1.0.0")
        .header("upload-offset", String(m.storedSizeBytes))
        .header("upload-length", String(m.storedSizeBytes))
        .header("cache-control", "no-store")
        .header("x-migration-status", m.status)
        .header("x-checksum-sha256", m.storedSha256 ?? "")
        .send();
    }
    // The current upload, or one of its parts (a new upload/init removes every earlier file of the migration).
    const other = id === undefined ? null : notThisUpload(m, id);
    if (other) throw other;
    const concat = String(request.headers["upload-concat"] ?? "").trim();
    if (request.method === "POST" && concat.startsWith("final;")) {
      const metaSha = /(?:^|,)\s*sha256 ([A-Za-z0-9+/=]+)/.exec(String(request.headers["upload-metadata"] ?? ""))?.[1];
      const { finalId, row } = await deps.tus.concatenate(m, concat.slice("final;".length).trim().split(/\s+/), metaSha ? Buffer.from(metaSha, "base64").toString() : null);
      return reply
        .code(201)
        .header("tus-resumable", "1.0.0")
        .header("upload-concat", concat)
        .header("location", `${originOf(request)}/api/v1/migrations/${m.id}/upload/tus/${finalId}`)
        .header("x-migration-status", row.status)
        .header("x-checksum-sha256", row.storedSha256 ?? "")
        .send();
    }
    const length = Number(request.headers["upload-length"]);
    if (request.method === "POST" && concat === "partial" && !(Number.isSafeInteger(length) && length > 0 && length <= m.declaredSizeBytes!)) {
      throw new DomainError("validation_error", `A part's Upload-Length is between 1 and ${m.declaredSizeBytes}, the size given to upload/init`);
    }
    if (request.method === "POST" && concat !== "partial" && request.headers["upload-length"] !== String(m.declaredSizeBytes)) {
      throw new DomainError("validation_error", `Upload-Length must be ${m.declaredSizeBytes}, the size given to upload/init`);
    }
    // A creation is held to the organisation's quota again: other migrations may have taken it since upload/init.
    if (request.method === "POST") await deps.quota.check(m, m.declaredSizeBytes!);
    const handle = async () => {
      hijack(request, reply);
      await deps.tus.handle(request.raw, reply.raw);
    };
    if (request.method === "POST" && concat === "partial") await deps.tus.createPart(m, length, handle);
    else if (request.method === "POST") await deps.tus.createUpload(m, handle);
    else await handle();
  };
  const tusSchema = (summary: string, withId: boolean) => ({
    tags: MIGRATIONS_TAG,
    summary,
    description: "tus 1.0 resumable upload (tiers 2 to 4); see upload/init for the whole exchange and the client's retry contract.",
    params: withId ? Type.Object({ migration_id: Uuid, upload_id: Type.String({ maxLength: 80 }) }) : MigrationParams,
    response: { 201: Type.Null(), 204: Type.Null(), 200: Type.Null(), ...errors(400, 404, 409, 413, 422) },
  });
  app.post("/migrations/:migration_id/upload/tus", { bodyLimit: Number.MAX_SAFE_INTEGER, schema: tusSchema("Create a resumable upload (tus)", false) }, tusRoute);
  app.head("/migrations/:migration_id/upload/tus/:upload_id", { schema: tusSchema("Offset of a resumable upload (tus)", true) }, tusRoute);
  app.patch("/migrations/:migration_id/upload/tus/:upload_id", { bodyLimit: Number.MAX_SAFE_INTEGER, schema: tusSchema("Send a chunk (tus)", true) }, tusRoute);
  app.delete("/migrations/:migration_id/upload/tus/:upload_id", { schema: tusSchema("Abandon a resumable upload (tus)", true) }, tusRoute);
}
