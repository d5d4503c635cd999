// Platform API route of environment actions, for the dashboard: restart, stop or start.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { notFound } from "../../lib/errors.ts";
import { errors, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import type { DeploymentsService } from "../deployments/deployments.service.ts";
import type { EnvironmentsRepo } from "./environments.repo.ts";

const TAG = ["Dashboard"];

export function environmentsPlatformRoutes(deps: {
  environments: Pick<EnvironmentsRepo, "projectOf">;
  deployments: Pick<DeploymentsService, "requestAction">;
  access: Pick<Access, "requireProject">;
}): FastifyPluginAsyncTypebox {
  const { access } = deps;
  return async (app) => {
    app.post(
      "/environments/:env_id/actions/:action",
      {
        schema: {
          tags: TAG,
          summary: "Restart, stop or start an environment",
          description: "Queues the operation for the environment's agent. 409 while another operation runs, or when the environment is not in the state the action needs.",
          params: Type.Object({ env_id: Uuid, action: Type.Union([Type.Literal("restart"), Type.Literal("stop"), Type.Literal("start")]) }),
          response: {
            202: Type.Object({ id: Uuid, environment_id: Uuid, kind: Type.String(), status: Type.String(), created_at: Timestamp }),
            ...errors(404, 409),
          },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const envId = request.params.env_id;
        const projectId = await deps.environments.projectOf(envId);
        if (!projectId) throw notFound("Environment");
        const a = await access.requireProject(p, projectId, "project.environments.operate", "Environment");
        const row = await deps.deployments.requestAction({ organizationId: a.organizationId, projectId }, envId, request.params.action, { userId: p.userId, apiKeyId: null });
        return reply.code(202).send({ id: row.id, environment_id: envId, kind: row.kind, status: row.status, created_at: row.createdAt.toISOString() });
      },
    );
  };
}
