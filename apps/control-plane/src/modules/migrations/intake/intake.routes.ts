// Platform API routes of a backup's arrival (platform spec 4.3): upload/init choosing the
// tier, the direct upload (tier_1), the resumable uploads (tus.routes.ts), the bucket's
// parallel parts (tiers 3 and 4 on S3) and the import from a URL.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../../lib/errors.ts";
import { errors } from "../../../lib/http-schemas.ts";
import { originOf } from "../../../lib/origin.ts";
import { personOf } from "../../auth/session-principal.ts";
import type { MigrationAccess } from "../record/migration-access.ts";
import { MigrationParams, MIGRATIONS_TAG, Sha256, StatusAnswer, UploadInit, UploadResult } from "../record/migration-schemas.ts";
import { CHUNK_BYTES, MAX_UPLOAD_BYTES } from "../record/migration-states.ts";
import type { BackupReceipt } from "./backup-receipt.ts";
import type { IntakeService } from "./intake.service.ts";
import { registerTusRoutes } from "./tus.routes.ts";
import type { TusUploads } from "./tus-uploads.ts";
import type { UploadQuota } from "./upload-quota.ts";
import { UPLOAD_DESCRIPTION } from "./upload-description.ts";

export function intakeRoutes(deps: { intake: IntakeService; receipt: Pick<BackupReceipt, "receive">; quota: Pick<UploadQuota, "check">; tus: TusUploads; access: MigrationAccess }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/migrations/:migration_id/upload/init",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Start an upload",
          description: UPLOAD_DESCRIPTION,
          params: MigrationParams,
          querystring: Type.Object(
            {
              file_name: Type.String({ minLength: 1, maxLength: 255 }),
              file_size: Type.Integer({ minimum: 1, maximum: MAX_UPLOAD_BYTES, description: "Bytes" }),
              sha256: Type.Optional(Sha256),
            },
            { additionalProperties: false },
          ),
          response: { 200: UploadInit, ...errors(404, 409, 413) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        const { row, tier, parts } = await deps.intake.initUpload(org, request.params.migration_id, request.query);
        const base = `${originOf(request)}/api/v1/migrations/${row.id}`;
        const direct = tier === "tier_1";
        return {
          migration_id: row.id,
          upload_tier: tier,
          upload_url: direct ? `${base}/upload/direct` : parts ? `${base}/upload/parts` : `${base}/upload/tus`,
          method: "POST",
          protocol: direct ? ("multipart" as const) : parts ? ("s3_multipart" as const) : ("tus" as const),
          chunk_size_bytes: direct || parts ? null : CHUNK_BYTES,
          part_size_bytes: parts?.partSize ?? null,
          part_count: parts?.partCount ?? null,
          complete_url: parts ? `${base}/upload/complete` : null,
          max_size_bytes: request.query.file_size,
        };
      },
    );

    app.post(
      "/migrations/:migration_id/upload/direct",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Upload a backup (tier_1)",
          description:
            "multipart/form-data with one field `file` (under 50 MB, the size declared to upload/init), streamed into the backup store. A SHA-256 is optional: upload/init's, a form field `sha256` sent before the file, or the X-Checksum-Sha256 header; without one the server computes it (the answer's sha256). 422 upload_checksum_mismatch when the size or a declared digest differ (nothing kept, migration failed); 409 wrong_upload_tier for a larger declared size.",
          params: MigrationParams,
          consumes: ["multipart/form-data"],
          headers: Type.Object({ "x-checksum-sha256": Type.Optional(Sha256) }),
          response: { 200: UploadResult, ...errors(404, 409, 413, 415, 422) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        const m = await deps.intake.uploading(org, request.params.migration_id, ["tier_1"]);
        if (!request.isMultipart()) throw new DomainError("unsupported_media_type", "Send the backup as multipart/form-data with the field file");
        const part = await request.file();
        if (!part || part.fieldname !== "file") throw new DomainError("validation_error", "The form needs a field named file holding the backup");
        const field = part.fields.sha256 as { value?: unknown } | undefined;
        const sha256 = typeof field?.value === "string" ? field.value : (request.headers["x-checksum-sha256"] ?? null);
        const row = await deps.receipt.receive(m, part.file, { size: m.declaredSizeBytes!, sha256 });
        return { migration_id: row.id, status: row.status, file_name: m.fileName ?? part.filename, size_bytes: row.storedSizeBytes!, sha256: row.storedSha256!, message: "Backup received and verified; analysis started" };
      },
    );

    registerTusRoutes(app, deps);

    app.post(
      "/migrations/:migration_id/upload/parts",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Presigned part URLs (tiers 3 and 4, S3)",
          description:
            "For an upload/init that answered protocol s3_multipart: presigned PUT URLs (valid 1 hour) of the parts asked for, numbered from 1 to part_count, each part_size_bytes but the last. PUT each part's bytes to its URL (in parallel) and keep the ETag header of each answer; ask again for any part whose URL expired.",
          params: MigrationParams,
          body: Type.Object({ part_numbers: Type.Array(Type.Integer({ minimum: 1, maximum: 10_000 }), { minItems: 1, maxItems: 1000, uniqueItems: true }) }, { additionalProperties: false }),
          response: { 200: Type.Object({ parts: Type.Array(Type.Object({ part_number: Type.Integer(), url: Type.String(), expires_at: Type.String() })) }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        return { parts: await deps.intake.partUrls(org, request.params.migration_id, request.body.part_numbers) };
      },
    );

    app.post(
      "/migrations/:migration_id/upload/complete",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Complete a parallel-part upload (tiers 3 and 4, S3)",
          description:
            "Assembles the parts in the bucket from their ETags (409 upload_incomplete when one is missing or wrong: send it and complete again), then reads the object back for the integrity check against upload/init's size and sha256, if one was declared (422 upload_checksum_mismatch: nothing kept, migration failed) and starts the analysis.",
          params: MigrationParams,
          body: Type.Object({ parts: Type.Array(Type.Object({ part_number: Type.Integer({ minimum: 1, maximum: 10_000 }), etag: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }), { minItems: 1, maxItems: 10_000 }) }, { additionalProperties: false }),
          response: { 200: UploadResult, ...errors(404, 409, 422) },
        },
      },
      async (request) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        const row = await deps.intake.completeParts(org, request.params.migration_id, request.body.parts);
        return { migration_id: row.id, status: row.status, file_name: row.fileName ?? "backup", size_bytes: row.storedSizeBytes!, sha256: row.storedSha256!, message: "Backup assembled and verified; analysis started" };
      },
    );

    app.post(
      "/migrations/:migration_id/import-url",
      {
        schema: {
          tags: MIGRATIONS_TAG,
          summary: "Import a backup from a URL",
          description:
            "Downloads the backup in the background from a public HTTPS URL answering 200 (presigned URLs: valid at least 1 hour), streamed into the backup store with migration_progress events. Private, loopback and link-local addresses are refused. A cut connection resumes with Range when the server supports it; after 600 s the migration fails with \"Download timed out after 600s\". Optional sha256 and file_size are checked at the end (else the size the server announced is; without sha256 the server computes it). 413 upload_quota_exceeded when file_size does not fit the organisation's quota; whatever the headers say, a download past what the quota leaves fails at once with \"Download failed (upload_quota_exceeded): …\", keeping nothing.",
          params: MigrationParams,
          body: Type.Object({ cloud_url: Type.String({ minLength: 9, maxLength: 4000 }), sha256: Type.Optional(Sha256), file_size: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: false }),
          response: { 202: StatusAnswer, ...errors(404, 409, 413) },
        },
      },
      async (request, reply) => {
        const org = await deps.access.orgOf(personOf(request), request.params.migration_id, "org.migrations.update");
        let url: URL;
        try {
          url = new URL(request.body.cloud_url);
        } catch {
          throw new DomainError("invalid_import_url", "cloud_url is not a URL");
        }
        if (url.protocol !== "https:") throw new DomainError("invalid_import_url", "cloud_url must use HTTPS");
        if (url.username || url.password) throw new DomainError("invalid_import_url", "cloud_url must not carry credentials: use a presigned URL");
        const row = await deps.intake.importUrl(org, request.params.migration_id, request.body);
        return reply.code(202).send({ status: "importing", migration_id: row.id, message: "Download started" });
      },
    );
  };
}
