// Platform API: the API keys of the public API, created here (shown once), listed and revoked.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { notFound } from "../../lib/errors.ts";
import { errors, Nullable, Page, PageQuery, Uuid, refTo } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { ApiKey } from "./api-keys.routes.ts";
import { API_KEY_LIMIT, type ApiKeysService } from "./api-keys.service.ts";

const OrgParams = Type.Object({ organization_id: Uuid });
const ApiKeyRef = refTo(ApiKey);

export function apiKeysPlatformRoutes(deps: { apiKeys: ApiKeysService; access: Pick<Access, "requireOrg" | "roleInProject"> }): FastifyPluginAsyncTypebox {
  const { apiKeys, access } = deps;
  return async (app) => {
    app.post(
      "/organizations/:organization_id/api-keys",
      {
        schema: {
          tags: ["API keys"],
          summary: "Create an API key",
          description: `The key (svc_live_ro_… or svc_live_rw_…) is in the response once and never again; only its hash is kept. An organisation holds at most ${API_KEY_LIMIT} active keys: one more is a 409 \`api_key_limit_reached\` (revoke one first).`,
          params: OrgParams,
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 100 }),
              access: Type.Union([Type.Literal("read_only"), Type.Literal("full_access")]),
              project_id: Type.Optional(Nullable(Uuid)),
            },
            { additionalProperties: false },
          ),
          response: { 201: Type.Object({ ...ApiKey.properties, key: Type.String() }), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        await access.requireOrg(p, orgId, "org.api_keys.manage");
        const projectId = request.body.project_id ?? null;
        if (projectId && (await access.roleInProject(p, projectId))?.organizationId !== orgId) throw notFound("Project");
        const key = await apiKeys.create({ organizationId: orgId, projectId, access: request.body.access, name: request.body.name, createdBy: p.userId });
        return reply.code(201).send(key);
      },
    );

    app.get(
      "/organizations/:organization_id/api-keys",
      { schema: { tags: ["API keys"], summary: "List API keys", params: OrgParams, querystring: PageQuery, response: { 200: Page(ApiKeyRef), ...errors(404) } } },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.api_keys.manage");
        return apiKeys.list({ organizationId: orgId, projectId: null }, request.query);
      },
    );

    app.delete(
      "/organizations/:organization_id/api-keys/:id",
      {
        schema: {
          tags: ["API keys"],
          summary: "Revoke an API key",
          params: Type.Object({ organization_id: Uuid, id: Uuid }),
          response: { 200: ApiKeyRef, ...errors(404) },
        },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.api_keys.manage");
        return apiKeys.revoke({ organizationId: orgId, projectId: null }, request.params.id);
      },
    );
  };
}
