// Public API routes for API keys: list, get, revoke (public spec 4.5, 5.6). Keys are
// created in the platform; here they can only be seen (never their secret) and revoked.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { scopeOf } from "./key-principal.ts";
import type { ApiKeysService } from "./api-keys.service.ts";

export const ApiKey = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    prefix: Type.String({ description: "First characters of the key, to recognise it" }),
    access: Type.Union([Type.Literal("read_only"), Type.Literal("full_access")]),
    scope: Type.Union([Type.Literal("organization"), Type.Literal("project")]),
    project_id: Nullable(Uuid),
    created_at: Timestamp,
    last_used_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
  },
  { $id: "ApiKey", title: "ApiKey" },
);
const ApiKeyRef = refTo(ApiKey);

export function apiKeysRoutes(service: ApiKeysService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/api-keys",
      {
        schema: {
          tags: ["API keys"],
          summary: "List API keys",
          description: "Keys of the organisation (a project-scoped key sees its project's keys), revoked ones included.",
          querystring: PageQuery,
          response: { 200: Page(ApiKeyRef), ...errors() },
        },
      },
      async (request) => service.list(scopeOf(request), request.query),
    );

    app.get(
      "/api-keys/:id",
      { schema: { tags: ["API keys"], summary: "Get an API key", params: IdParams, response: { 200: ApiKeyRef, ...errors(404) } } },
      async (request) => service.get(scopeOf(request), request.params.id),
    );

    app.delete(
      "/api-keys/:id",
      {
        schema: {
          tags: ["API keys"],
          summary: "Revoke an API key",
          description: "The key stops working at once on the replica that answers, and moments later (when the NOTIFY arrives) on every other one. Returns the revoked key. Needs a full-access key.",
          params: IdParams,
          response: { 200: ApiKeyRef, ...errors(404) },
        },
      },
      async (request) => {
        return service.revoke(scopeOf(request), request.params.id);
      },
    );
  };
}
