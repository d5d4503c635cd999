// POST …/environments/{id}/copy-from in both APIs (copy-from.ts has the rules): 202 with the
// copy operation to follow, as a restore answers.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../lib/errors.ts";
import { errors, IdParams, StringEnum, Uuid, refTo } from "../../lib/http-schemas.ts";
import { personOf } from "../auth/session-principal.ts";
import { keyActorOf, scopeOf } from "../api-keys/key-principal.ts";
import { ActionResponse } from "../deployments/public/deployments.routes.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import { COPY_BACKUPS, type CopyFrom } from "./copy-from.ts";

const DESCRIPTION =
  "Replaces this staging or development environment's database and file store with a copy of another environment of the same project, in one operation " +
  "(kind `copy`, followed like a restore). `backup`: `fresh` (default) copies the source now without stopping it: on a shared server a consistent pg_dump " +
  "streamed into a new database and the file store copied by name (nothing leaves the server); across servers a backup of the source to the backup store, taken " +
  "now and listed with its backups, which the copy waits for (queued) and then restores (a copy whose backup fails fails with code copy_backup_failed, this " +
  "environment as it was); `latest` restores the source's most recent backup in the backup " +
  "store (from the source's copy on the target's server when it has one). The copy is loaded into a new database, neutralised by the target image's own " +
  "`odoo neutralize`, re-keyed (new database uuid and secret, this environment's address) and swapped in; a failure at any step leaves this environment as it was, " +
  "and the source is only read. 409 copy_into_production for the production environment, copy_not_deployed when either was never deployed, " +
  "copy_source_has_no_backup (latest) when the source has no backup in the store, copy_source_busy (fresh, across servers) when the source runs another operation, " +
  "task_in_progress while another operation runs here; 422 copy_source_is_target, copy_source_other_project.";

const CopyFromBody = Type.Object(
  {
    from_environment_id: Uuid,
    backup: Type.Optional(
      StringEnum(COPY_BACKUPS, { description: "fresh (default): a copy taken now (across servers through a backup taken now); latest: the source's most recent backup in the backup store" }),
    ),
  },
  { additionalProperties: false },
);

export function copyFromPublicRoutes(copy: CopyFrom, publicPrefix: string): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/environments/:id/copy-from",
      {
        schema: {
          tags: ["Environments"],
          summary: "Copy another environment into this one",
          description: `${DESCRIPTION} Needs a full-access key.`,
          params: IdParams,
          body: CopyFromBody,
          response: { 202: refTo(ActionResponse), ...errors(404, 409, 422) },
        },
      },
      async (request, reply) => {
        const op = await copy.copyFrom(scopeOf(request), request.params.id, request.body, keyActorOf(request));
        return reply.code(202).send({ task_id: op.id, status: "queued" as const, environment_id: op.environmentId, poll_url: `${publicPrefix}/deployments/${op.id}` });
      },
    );
  };
}

export function copyFromPlatformRoutes(deps: { copy: CopyFrom; deployments: Pick<DeploymentsService, "environmentScope" | "heavy"> }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/environments/:env_id/copy-from",
      {
        schema: {
          tags: ["Environments"],
          summary: "Copy another environment into this one",
          description: `${DESCRIPTION} Here 409 deployment_in_progress instead of task_in_progress.`,
          params: Type.Object({ env_id: Uuid }),
          body: CopyFromBody,
          response: { 202: Type.Object({ message: Type.String(), deployment_id: Uuid, status: Type.String() }), ...errors(404, 409, 422) },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        const scope = await deps.deployments.environmentScope(person, request.params.env_id, "project.backups.restore");
        await deps.deployments.heavy(scope.organizationId);
        const op = await deps.copy.copyFrom(scope, request.params.env_id, request.body, { userId: person.userId, apiKeyId: null }).catch((err: unknown) => {
          if (err instanceof DomainError && err.code === "task_in_progress") throw new DomainError("deployment_in_progress", "Deployment already in progress");
          throw err;
        });
        return reply.code(202).send({ message: "Copy started", deployment_id: op.id, status: op.status });
      },
    );
  };
}
