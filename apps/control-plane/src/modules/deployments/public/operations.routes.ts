// Public API additions beyond spec 4.1 (non-breaking, spec 9): cancelling, retrying and
// rolling back to a task, and destroying an environment. Retry and rollback are the platform
// API's rules (operations/retry-rollback.ts), answered as an action (spec 2.5).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../../lib/errors.ts";
import { errors, IdParams, refTo } from "../../../lib/http-schemas.ts";
import { keyActorOf, scopeOf } from "../../api-keys/key-principal.ts";
import { ActionResponse, Task } from "./deployments.routes.ts";
import type { DeploymentsService } from "../operations/operations.service.ts";
import type { RequestedOperation } from "../operations/operation-start.ts";

const TaskRef = refTo(Task);
const ActionResponseRef = refTo(ActionResponse);

export function operationsRoutes(service: DeploymentsService, publicPrefix: string): FastifyPluginAsyncTypebox {
  /** The action response (spec 2.5) of a task just requested. */
  const queued = (row: RequestedOperation) => ({ task_id: row.id, status: "queued" as const, environment_id: row.environmentId, poll_url: `${publicPrefix}/deployments/${row.id}` });

  return async (app) => {
    app.post(
      "/deployments/:id/retry",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Retry a failed task",
          description:
            "A new task on the same environment with the failed task's kind, branch, commit and configuration; the deployment record's extra_data.retry_of names the original. " +
            "400 not_retryable unless the task failed; 409 task_in_progress while another task of the environment is queued or running. " +
            "Returns 202 at once; poll poll_url until the task is completed, failed or cancelled. Needs a full-access key. Supports Idempotency-Key and X-Idempotency-Key.",
          params: IdParams,
          response: { 202: ActionResponseRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const row = await service.retryTask(scopeOf(request), request.params.id, keyActorOf(request));
        return reply.code(202).send(queued(row));
      },
    );

    app.post(
      "/deployments/:id/rollback",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Roll back to a task",
          description:
            "The path names the successful deploy (deploy, redeploy or rollback) to go back TO: a new rollback task brings its code, image, configuration and addons back; " +
            "the database and file store are not rolled back. 400 not_rollback_target unless it succeeded and deployed code, 400 environment_inactive once the environment " +
            "was destroyed, 409 task_in_progress while another task of the environment is queued or running. " +
            "Returns 202 at once; poll poll_url until the task is completed, failed or cancelled. Needs a full-access key. Supports Idempotency-Key and X-Idempotency-Key.",
          params: IdParams,
          response: { 202: ActionResponseRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const row = await service.rollbackTask(scopeOf(request), request.params.id, keyActorOf(request));
        return reply.code(202).send(queued(row));
      },
    );

    app.post(
      "/deployments/:id/cancel",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Cancel a task",
          description:
            "A task not yet started is never sent; a running one stops at its next step boundary and says so in its log. " +
            "409 task_not_cancellable once it has finished. Needs a full-access key.",
          params: IdParams,
          response: { 200: TaskRef, ...errors(404, 409) },
        },
      },
      async (request) => service.cancel(scopeOf(request), request.params.id, keyActorOf(request)),
    );

    app.delete(
      "/environments/:id",
      {
        schema: {
          tags: ["Deployment actions"],
          summary: "Destroy an environment",
          description:
            "Removes the environment's application and database containers, its database volume, network and configuration; " +
            "with delete_data=true also its data directory (file store, addons). Needs X-Confirm-Delete: true and a full-access key. " +
            "Returns 202 with a task to poll; the environment ends pending and inactive, and gives its domain and aliases up (another " +
            "environment may take them).",
          params: IdParams,
          querystring: Type.Object({ delete_data: Type.Boolean({ default: false }) }, { additionalProperties: false }),
          headers: Type.Object({ "x-confirm-delete": Type.Optional(Type.String()) }),
          response: { 202: ActionResponseRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        if (request.headers["x-confirm-delete"] !== "true") {
          throw new DomainError("confirm_required", "Destroying an environment needs the header X-Confirm-Delete: true");
        }
        const row = await service.destroy(scopeOf(request), request.params.id, request.query.delete_data, keyActorOf(request));
        return reply.code(202).send(queued(row));
      },
    );
  };
}
