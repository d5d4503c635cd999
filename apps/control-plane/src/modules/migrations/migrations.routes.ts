// Platform API routes of migrations (platform spec 4.3, permissions org.migrations.* of 5).
// A migration of an organisation the caller has no role in is a 404, a role without the
// permission a 403, as on every platform route.
import { Type } from "typebox";
import type { FastifyRequest } from "fastify";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import multipart from "@fastify/multipart";
import { DomainError } from "../../lib/errors.ts";
import { hijack } from "../../lib/request-id.ts";
import { errors, StringEnum, Uuid, refTo } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import type { Permission } from "../auth/permissions.ts";
import { personOf } from "../auth/session-principal.ts";
import { originOf } from "../backups/backups.routes.ts";
import { Analysis, AvailableServer, ConfigureBody, CreateMigrationBody, Migration, Sha256, StatusAnswer, UploadInit, UploadResult } from "./migration-schemas.ts";
import { CHUNK_BYTES, MAX_UPLOAD_BYTES, MIGRATION_STATUSES, TIER_LIMITS } from "./migration-states.ts";
import type { MigrationsService } from "./migrations.service.ts";
import type { MigrationExecution } from "./migration-execution.ts";
import type { MigrationsRepo } from "./migrations.repo.ts";
import { notThisUpload, type TusUploads } from "./tus-uploads.ts";

const TAG = ["Migrations"];
const MigrationRef = refTo(Migration);
const Params = Type.Object({ migration_id: Uuid });

const UPLOAD_DESCRIPTION = `Chooses the upload tier for the declared size and returns where to send the backup:
- **tier_1** (under 50 MB): \`POST upload_url\` (…/upload/direct) as multipart/form-data with one field \`file\`; a SHA-256, if the client declares one (none is required), goes in \`sha256\` here, a form field \`sha256\` before the file, or the \`X-Checksum-Sha256\` header.
- **tier_2** (50 to 500 MB), **tier_3** (500 MB to 5 GB), **tier_4** (over 5 GB): the [tus 1.0 protocol](https://tus.io/protocols/resumable-upload) at \`upload_url\` (…/upload/tus), in chunks of \`chunk_size_bytes\` (10 MiB):
  \`POST\` with \`Tus-Resumable: 1.0.0\`, \`Upload-Length\` (the size declared here) and \`Upload-Metadata\` (\`filename\`, and optionally \`sha256\` unless given here) creates the upload and answers its URL in \`Location\`;
  \`PATCH\` that URL with \`Content-Type: application/offset+octet-stream\` and \`Upload-Offset\`; after a cut connection, \`HEAD\` answers \`Upload-Offset\` and the client continues from there. Once the backup is in (the last chunk's answer carries X-Checksum-Sha256), \`HEAD\` on the upload answers 200 with \`Upload-Offset\` equal to \`Upload-Length\`: complete, also after that answer was lost.
  **Client retry contract (tier_4, and any tier):** on a network error, a 5xx, or a 409 offset mismatch, \`HEAD\` the upload URL and resume at the returned offset, waiting 1 s, 2 s, 4 s … (at most 60 s) between tries; a 404/410 means the upload is gone: call upload/init again.
- **tiers 3 and 4 on an S3 backup store**: protocol \`s3_multipart\` (a sha256, if any, is declared here): \`POST upload_url\` (…/upload/parts) \`{part_numbers}\` answers presigned part URLs; \`PUT\` the parts in parallel straight to the bucket, keeping each ETag; \`POST complete_url\` \`{parts: [{part_number, etag}]}\`. A failed part is PUT again (same retry table); an expired URL is asked for again.
- **parallel parts with tus** (tiers 3 and 4 on a local backup store; any tus tier may use it): the tus concatenation extension. \`POST upload_url\` with \`Upload-Concat: partial\` and the part's own \`Upload-Length\` creates a part (send and resume each as above, in parallel); once every part is complete, \`POST upload_url\` with \`Upload-Concat: final;<part URL> <part URL> …\` (in order; \`Upload-Metadata\` may carry sha256) joins them through the integrity check into the store and answers 201 with X-Checksum-Sha256 (409 upload_incomplete while a part misses bytes or the parts do not add up to the declared size).
Every tier ends with the integrity check before the analysis: the declared size, and the SHA-256 when one was declared (without one, the server computes it while receiving; the migration and its analysis show it with sha256_source computed). A mismatch answers 422 upload_checksum_mismatch, fails the migration with that error_message and keeps nothing. A new init replaces an unfinished upload.
**Bounds:** the organisation's migration backups (stored, and the declared size of those under way) take at most its quota (BERTH_MIGRATION_QUOTA_BYTES, 200 GiB by default): upload/init and a tus creation past it answer 413 upload_quota_exceeded with the figures. tus parts: at most 100 per upload (409 too_many_upload_parts; a final concatenation lists at most as many), 1000 per organisation at once, and together at most the declared size (413 upload_parts_too_large).`;

export function migrationsRoutes(deps: {
  migrations: MigrationsService;
  execution: MigrationExecution;
  repo: Pick<MigrationsRepo, "byId">;
  access: Access;
  tus: TusUploads;
}): FastifyPluginAsyncTypebox {
  const { migrations } = deps;

  /** The migration's organisation, after the caller's role there is checked: 404 without one (or no such migration), 403 without the permission. */
  async function orgOf(request: FastifyRequest, migrationId: string, permission: Permission): Promise<string> {
    const person = personOf(request);
    const m = await deps.repo.byId(migrationId);
    if (!m) throw new DomainError("not_found", "Migration not found");
    try {
      await deps.access.requireOrg(person, m.organizationId, permission);
    } catch (error) {
      if (error instanceof DomainError && error.code === "not_found") throw new DomainError("not_found", "Migration not found");
      throw error;
    }
    return m.organizationId;
  }

  return async (app) => {
    app.addSchema(Migration);
    app.addSchema(Analysis);
    await app.register(multipart, { limits: { fileSize: TIER_LIMITS.tier_1, files: 1, fields: 4, fieldSize: 1024, parts: 6 } });
    // tus bodies are read by the tus server itself, as a stream.
    app.addContentTypeParser("application/offset+octet-stream", (_request, _payload, done) => done(null));

    app.post(
      "/migrations",
      {
        schema: {
          tags: TAG,
          summary: "Create a migration",
          description: "Starts moving an existing ERP in: the record is pending until a backup is uploaded (upload/init) or imported (import-url). data_processing_consent must be true (400 consent_required).",
          body: CreateMigrationBody,
          response: { 201: MigrationRef, ...errors(404) },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        await deps.access.requireOrg(person, request.body.organization_id, "org.migrations.create");
        const row = await migrations.create(request.body.organization_id, { ...request.body, source_type: request.body.source_type as string }, { userId: person.userId });
        return reply.code(201).send(await migrations.view(row));
      },
    );

    app.get(
      "/migrations",
      {
        schema: {
          tags: TAG,
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
        return migrations.list(request.query.organization_id, { ...request.query, status: request.query.status as string | undefined });
      },
    );

    app.get(
      "/migrations/:migration_id",
      { schema: { tags: TAG, summary: "Get a migration", params: Params, response: { 200: MigrationRef, ...errors(404) } } },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.list");
        return migrations.view(await migrations.get(org, request.params.migration_id));
      },
    );

    app.get(
      "/migrations/:migration_id/analysis",
      {
        schema: {
          tags: TAG,
          summary: "Get the analysis of the backup",
          description:
            "What the analysis read from the stored backup (409 migration_not_analyzed before it finished), and `requirements`: what the environment it creates must have, compared with the target at this request (the database image's PostgreSQL against postgres_major_required; the Enterprise add-ons when enterprise_modules is not empty). start refuses with a requirement's code while it is not met.",
          params: Params,
          response: { 200: refTo(Analysis), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.list");
        return migrations.analysis(org, request.params.migration_id);
      },
    );

    app.post(
      "/migrations/:migration_id/upload/init",
      {
        schema: {
          tags: TAG,
          summary: "Start an upload",
          description: UPLOAD_DESCRIPTION,
          params: Params,
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
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        const { row, tier, parts } = await migrations.initUpload(org, request.params.migration_id, request.query);
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
          tags: TAG,
          summary: "Upload a backup (tier_1)",
          description:
            "multipart/form-data with one field `file` (under 50 MB, the size declared to upload/init), streamed into the backup store. A SHA-256 is optional: upload/init's, a form field `sha256` sent before the file, or the X-Checksum-Sha256 header; without one the server computes it (the answer's sha256). 422 upload_checksum_mismatch when the size or a declared digest differ (nothing kept, migration failed); 409 wrong_upload_tier for a larger declared size.",
          params: Params,
          consumes: ["multipart/form-data"],
          headers: Type.Object({ "x-checksum-sha256": Type.Optional(Sha256) }),
          response: { 200: UploadResult, ...errors(404, 409, 413, 415, 422) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        const m = await migrations.uploading(org, request.params.migration_id, ["tier_1"]);
        if (!request.isMultipart()) throw new DomainError("unsupported_media_type", "Send the backup as multipart/form-data with the field file");
        const part = await request.file();
        if (!part || part.fieldname !== "file") throw new DomainError("validation_error", "The form needs a field named file holding the backup");
        const field = part.fields.sha256 as { value?: unknown } | undefined;
        const sha256 = typeof field?.value === "string" ? field.value : (request.headers["x-checksum-sha256"] ?? null);
        const row = await migrations.receive(m, part.file, { size: m.declaredSizeBytes!, sha256 });
        return { migration_id: row.id, status: row.status, file_name: m.fileName ?? part.filename, size_bytes: row.storedSizeBytes!, sha256: row.storedSha256!, message: "Backup received and verified; analysis started" };
      },
    );

    // tus (tiers 2 to 4): authorised here, then handed to the tus server as raw Node request/response.
    // The migration's state is read inside serve(): a cancel meanwhile leaves the files to this request until it is answered.
    const tusRoute = async (request: FastifyRequest<{ Params: { migration_id: string; upload_id?: string } }>, reply: import("fastify").FastifyReply) => {
      const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
      return deps.tus.serve(request.params.migration_id, () => tusRequest(org, request, reply));
    };
    const tusRequest = async (org: string, request: FastifyRequest<{ Params: { migration_id: string; upload_id?: string } }>, reply: import("fastify").FastifyReply) => {
      const id = request.params.upload_id;
      const { m, finished } = await migrations.resumable(org, request.params.migration_id, id, ["tier_2", "tier_3", "tier_4"]);
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
      if (request.method === "POST") await migrations.checkQuota(m, m.declaredSizeBytes!);
      const handle = async () => {
        hijack(request, reply);
        await deps.tus.handle(request.raw, reply.raw);
      };
      if (request.method === "POST" && concat === "partial") await deps.tus.createPart(m, length, handle);
      else await handle();
    };
    const tusSchema = (summary: string, withId: boolean) => ({
      tags: TAG,
      summary,
      description: "tus 1.0 resumable upload (tiers 2 to 4); see upload/init for the whole exchange and the client's retry contract.",
      params: withId ? Type.Object({ migration_id: Uuid, upload_id: Type.String({ maxLength: 80 }) }) : Params,
      response: { 201: Type.Null(), 204: Type.Null(), 200: Type.Null(), ...errors(400, 404, 409, 413, 422) },
    });
    app.post("/migrations/:migration_id/upload/tus", { bodyLimit: Number.MAX_SAFE_INTEGER, schema: tusSchema("Create a resumable upload (tus)", false) }, tusRoute);
    app.head("/migrations/:migration_id/upload/tus/:upload_id", { schema: tusSchema("Offset of a resumable upload (tus)", true) }, tusRoute);
    app.patch("/migrations/:migration_id/upload/tus/:upload_id", { bodyLimit: Number.MAX_SAFE_INTEGER, schema: tusSchema("Send a chunk (tus)", true) }, tusRoute);
    app.delete("/migrations/:migration_id/upload/tus/:upload_id", { schema: tusSchema("Abandon a resumable upload (tus)", true) }, tusRoute);

    app.post(
      "/migrations/:migration_id/upload/parts",
      {
        schema: {
          tags: TAG,
          summary: "Presigned part URLs (tiers 3 and 4, S3)",
          description:
            "For an upload/init that answered protocol s3_multipart: presigned PUT URLs (valid 1 hour) of the parts asked for, numbered from 1 to part_count, each part_size_bytes but the last. PUT each part's bytes to its URL (in parallel) and keep the ETag header of each answer; ask again for any part whose URL expired.",
          params: Params,
          body: Type.Object({ part_numbers: Type.Array(Type.Integer({ minimum: 1, maximum: 10_000 }), { minItems: 1, maxItems: 1000, uniqueItems: true }) }, { additionalProperties: false }),
          response: { 200: Type.Object({ parts: Type.Array(Type.Object({ part_number: Type.Integer(), url: Type.String(), expires_at: Type.String() })) }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        return { parts: await migrations.partUrls(org, request.params.migration_id, request.body.part_numbers) };
      },
    );

    app.post(
      "/migrations/:migration_id/upload/complete",
      {
        schema: {
          tags: TAG,
          summary: "Complete a parallel-part upload (tiers 3 and 4, S3)",
          description:
            "Assembles the parts in the bucket from their ETags (409 upload_incomplete when one is missing or wrong: send it and complete again), then reads the object back for the integrity check against upload/init's size and sha256, if one was declared (422 upload_checksum_mismatch: nothing kept, migration failed) and starts the analysis.",
          params: Params,
          body: Type.Object({ parts: Type.Array(Type.Object({ part_number: Type.Integer({ minimum: 1, maximum: 10_000 }), etag: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }), { minItems: 1, maxItems: 10_000 }) }, { additionalProperties: false }),
          response: { 200: UploadResult, ...errors(404, 409, 422) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        const row = await migrations.completeParts(org, request.params.migration_id, request.body.parts);
        return { migration_id: row.id, status: row.status, file_name: row.fileName ?? "backup", size_bytes: row.storedSizeBytes!, sha256: row.storedSha256!, message: "Backup assembled and verified; analysis started" };
      },
    );

    app.post(
      "/migrations/:migration_id/import-url",
      {
        schema: {
          tags: TAG,
          summary: "Import a backup from a URL",
          description:
            "Downloads the backup in the background from a public HTTPS URL answering 200 (presigned URLs: valid at least 1 hour), streamed into the backup store with migration_progress events. Private, loopback and link-local addresses are refused. A cut connection resumes with Range when the server supports it; after 600 s the migration fails with \"Download timed out after 600s\". Optional sha256 and file_size are checked at the end (else the size the server announced is; without sha256 the server computes it). 413 upload_quota_exceeded when file_size does not fit the organisation's quota; whatever the headers say, a download past what the quota leaves fails at once with \"Download failed (upload_quota_exceeded): …\", keeping nothing.",
          params: Params,
          body: Type.Object({ cloud_url: Type.String({ minLength: 9, maxLength: 4000 }), sha256: Type.Optional(Sha256), file_size: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: false }),
          response: { 202: StatusAnswer, ...errors(404, 409, 413) },
        },
      },
      async (request, reply) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        let url: URL;
        try {
          url = new URL(request.body.cloud_url);
        } catch {
          throw new DomainError("invalid_import_url", "cloud_url is not a URL");
        }
        if (url.protocol !== "https:") throw new DomainError("invalid_import_url", "cloud_url must use HTTPS");
        if (url.username || url.password) throw new DomainError("invalid_import_url", "cloud_url must not carry credentials: use a presigned URL");
        const row = await migrations.importUrl(org, request.params.migration_id, request.body);
        return reply.code(202).send({ status: "importing", migration_id: row.id, message: "Download started" });
      },
    );

    app.post(
      "/migrations/:migration_id/configure",
      {
        schema: {
          tags: TAG,
          summary: "Configure a migration",
          description: "Chooses the target server (one of the organisation's, 400 server_not_found otherwise), domain and repository once the backup is analysed (409 migration_not_configurable before). The answer is the migration, now ready to start.",
          params: Params,
          body: ConfigureBody,
          response: { 200: MigrationRef, ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        return migrations.view(await migrations.configure(org, request.params.migration_id, request.body));
      },
    );

    app.post(
      "/migrations/:migration_id/start",
      {
        schema: {
          tags: TAG,
          summary: "Start a migration",
          description:
            "Runs the 12 steps on the target server (202): 1 a project named after the migration on the target server, with the detected ERP version and the repository; 2 an environment linked by migration_id, sized by the recommendation, at target_domain (`production` when configured so, else `staging`); 3 to 12 that environment's first deployment (trigger `migration`), which restores the backup because of the restore-once rule (platform spec 4.1 rule 9). Follow it with GET (steps, progress_percent, current_step) or the migration_progress events; a failure fails the migration with error_message (retry, then start again: the project and environment are reused). 409 migration_not_ready unless configured (ready); 409 enterprise_addons_required or database_image_too_old, with nothing made, while a requirement of GET analysis is not met (its message says what to do; start again once it is).",
          params: Params,
          response: { 202: StatusAnswer, ...errors(400, 404, 409) },
        },
      },
      async (request, reply) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.execute");
        return reply.code(202).send(await deps.execution.start(org, request.params.migration_id, personOf(request)));
      },
    );

    app.post(
      "/migrations/:migration_id/cancel",
      {
        schema: { tags: TAG, summary: "Cancel a migration", description: "Any migration not completed, cancelled or unlinked (409 migration_not_cancellable). An unfinished upload is discarded at once; stored bytes by the cleanup job. A running migration's deployment is cancelled: its agent stops at the next step and puts back what the restore had replaced.", params: Params, response: { 200: StatusAnswer, ...errors(404, 409) } },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        const row = await migrations.cancel(org, request.params.migration_id, { userId: personOf(request).userId });
        return { status: row.status, migration_id: row.id, message: "Migration cancelled" };
      },
    );

    app.post(
      "/migrations/:migration_id/retry",
      {
        schema: {
          tags: TAG,
          summary: "Retry a failed migration",
          description: "Only a failed migration (409 migration_not_retryable). retry_count goes up; a stored backup whose analysis failed is analysed again (status uploading, current_step analyzing); an analysed one becomes ready (start again); one whose backup never arrived goes back to pending.",
          params: Params,
          response: { 200: Type.Object({ ...StatusAnswer.properties, retry_count: Type.Integer() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        const row = await migrations.retry(org, request.params.migration_id);
        return { status: row.status, migration_id: row.id, message: row.currentStep === "analyzing" ? "Analysis started again" : "Migration reset", retry_count: row.retryCount };
      },
    );

    app.delete(
      "/migrations/:migration_id",
      {
        schema: {
          tags: TAG,
          summary: "Delete a migration",
          description: "Deletes the record and the backup's bytes in the backup store (and an unfinished upload). Refused while it runs (409 migration_in_progress).",
          params: Params,
          response: { 200: Type.Object({ migration_id: Uuid, deleted: Type.Boolean(), storage_deleted: Type.Boolean(), message: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.delete");
        const out = await migrations.delete(org, request.params.migration_id);
        return { migration_id: request.params.migration_id, deleted: true, storage_deleted: out.storage_deleted, message: "Migration deleted" };
      },
    );

    app.post(
      "/migrations/:migration_id/unlink-environment",
      {
        schema: {
          tags: TAG,
          summary: "Unlink the migrated environment",
          description:
            "Destroys the environment the migration created, with its database and data (a destroy operation on its server), and returns the migration to analyzed: configure and start it again. The answer's status is `unlinked`. 409 migration_not_linked when it has none, migration_in_progress while it runs.",
          params: Params,
          response: { 200: Type.Object({ status: Type.String(), migration_id: Uuid, environment_deleted: Type.Boolean(), message: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.update");
        return deps.execution.unlink(org, request.params.migration_id, personOf(request));
      },
    );

    app.get(
      "/migrations/:migration_id/available-vms",
      {
        schema: {
          tags: TAG,
          summary: "Servers that fit the recommendation",
          description: "The organisation's servers with room for the analysis' recommended CPU, RAM and disk, from what their environments were given and their live figures (409 migration_not_analyzed before the analysis).",
          params: Params,
          response: { 200: Type.Array(AvailableServer), ...errors(404, 409) },
        },
      },
      async (request) => {
        const org = await orgOf(request, request.params.migration_id, "org.migrations.list");
        return migrations.availableServers(org, request.params.migration_id);
      },
    );
  };
}
