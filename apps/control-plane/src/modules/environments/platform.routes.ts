// Platform API routes of an environment, for the dashboard: restart, stop or start it, its
// domains' verification and its promotion to production (the public API's routes and
// schemas, under the platform's permission codes).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { notFound } from "../../lib/errors.ts";
import { errors, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import type { Permission } from "../auth/permissions.ts";
import { personOf } from "../auth/session-principal.ts";
import type { SessionPrincipal } from "../auth/sessions.ts";
import type { DeploymentsService } from "../deployments/operations/operations.service.ts";
import type { EnvironmentsRepo } from "./environments.repo.ts";
import type { EnvironmentsService } from "./environments.service.ts";
import { DomainParams, EnvironmentDomain, emptyBodyIsNoPreviousStage, PromoteEnvironment, PromotionOutcome } from "./environments.routes.ts";

const TAG = ["Dashboard"];
const EnvParams = Type.Object({ env_id: Uuid });
const EnvDomainParams = Type.Object({ env_id: Uuid, domain: DomainParams.properties.domain });

/**
 * Who may see the environment's domains: anyone who sees the environment, i.e. holds any role
 * in its project (org.view is the lowest permission, held by every role).
 */
const SEE_ENVIRONMENT: Permission = "org.view";

export function environmentsPlatformRoutes(deps: {
  environments: Pick<EnvironmentsRepo, "projectOf">;
  environmentsService: Pick<EnvironmentsService, "domains" | "verifyDomain" | "promote">;
  deployments: Pick<DeploymentsService, "requestAction">;
  access: Pick<Access, "requireProject">;
}): FastifyPluginAsyncTypebox {
  const { access } = deps;

  /** The environment's project scope when the caller holds `permission` there; 404 when they see no such environment. */
  async function scopeOf(p: SessionPrincipal, envId: string, permission: Permission) {
    const projectId = await deps.environments.projectOf(envId);
    if (!projectId) throw notFound("Environment");
    const a = await access.requireProject(p, projectId, permission, "Environment");
    return { organizationId: a.organizationId, projectId };
  }

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
        const scope = await scopeOf(p, envId, "project.environments.operate");
        const row = await deps.deployments.requestAction(scope, envId, request.params.action, { userId: p.userId, apiKeyId: null });
        return reply.code(202).send({ id: row.id, environment_id: envId, kind: row.kind, status: row.status, created_at: row.createdAt.toISOString() });
      },
    );

    app.post(
      "/environments/:env_id/promote",
      {
        schema: {
          tags: ["Environments"],
          summary: "Promote an environment to production",
          description:
            "As the public API's POST /environments/{id}/promote: the environment becomes its project's production and the current production " +
            "`previous_stage` (required while there is one: 400 `previous_stage_required`), in one transaction written to the audit log. " +
            "Needs project.environments.update.",
          params: EnvParams,
          body: PromoteEnvironment,
          response: { 200: PromotionOutcome, ...errors(404, 409) },
        },
        preValidation: emptyBodyIsNoPreviousStage,
      },
      async (request) => {
        const p = personOf(request);
        const envId = request.params.env_id;
        const scope = await scopeOf(p, envId, "project.environments.update");
        return deps.environmentsService.promote(scope, envId, request.body.previous_stage, { userId: p.userId, apiKeyId: null });
      },
    );

    app.get(
      "/environments/:env_id/domains",
      {
        schema: {
          tags: ["Environments"],
          summary: "List an environment's domains with their verification",
          description:
            "The domain and aliases, each with its claim's status (pending, verified, released), the TXT record that proves it and the other proofs " +
            "(A/AAAA at the server's addresses, a CNAME to the generated name), as the public API's GET /environments/{id}/domains. Anyone with a role in its project.",
          params: EnvParams,
          response: { 200: Type.Object({ data: Type.Array(EnvironmentDomain) }), ...errors(404) },
        },
      },
      async (request) => {
        const envId = request.params.env_id;
        return deps.environmentsService.domains(await scopeOf(personOf(request), envId, SEE_ENVIRONMENT), envId);
      },
    );

    app.post(
      "/environments/:env_id/domains/:domain/verify",
      {
        schema: {
          tags: ["Environments"],
          summary: "Check a domain's DNS now",
          description:
            "Looks up the name's TXT _berth-challenge record, A/AAAA and CNAME now and answers the claim's status after it (verified when proven; a proof " +
            "releases other organisations' pending claims of the name), as the public API's POST /environments/{id}/domains/{domain}/verify. 404 when the " +
            "environment does not have this name. Needs project.environments.update (as changing the domain does).",
          params: EnvDomainParams,
          response: { 200: EnvironmentDomain, ...errors(404) },
        },
      },
      async (request) => {
        const { env_id: envId, domain } = request.params;
        return deps.environmentsService.verifyDomain(await scopeOf(personOf(request), envId, "project.environments.update"), envId, domain);
      },
    );
  };
}
