// Platform API routes of webhook subscriptions, for the dashboard (organisation-wide ones).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, Page, PageQuery, StringEnum, Uuid, refTo } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { WEBHOOK_EVENTS } from "./webhook-events.ts";
import { Webhook } from "./webhooks.routes.ts";
import type { WebhooksService } from "./webhooks.service.ts";

const TAG = ["Dashboard"];
const OrgParams = Type.Object({ organization_id: Uuid });
const WebhookRef = refTo(Webhook);

export function webhooksPlatformRoutes(deps: { webhooks: Pick<WebhooksService, "list" | "create" | "remove">; access: Pick<Access, "requireOrg"> }): FastifyPluginAsyncTypebox {
  const { webhooks, access } = deps;
  return async (app) => {
    app.get(
      "/organizations/:organization_id/webhooks",
      {
        schema: { tags: TAG, summary: "List webhook subscriptions", params: OrgParams, querystring: PageQuery, response: { 200: Page(WebhookRef), ...errors(404) } },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.webhooks.manage");
        return webhooks.list({ organizationId: orgId, projectId: null }, request.query);
      },
    );

    app.post(
      "/organizations/:organization_id/webhooks",
      {
        schema: {
          tags: TAG,
          summary: "Create a webhook subscription",
          description: "The signing secret is in this response once and never again.",
          params: OrgParams,
          body: Type.Object(
            {
              url: Type.String({ minLength: 1, maxLength: 2048 }),
              events: Type.Array(StringEnum(WEBHOOK_EVENTS), { minItems: 1, maxItems: WEBHOOK_EVENTS.length }),
              description: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
            },
            { additionalProperties: false },
          ),
          response: { 201: Type.Object({ ...Webhook.properties, secret: Type.String({ description: "Signing secret (whsec_…), shown once" }) }), ...errors(404) },
        },
      },
      async (request, reply) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.webhooks.manage");
        const b = request.body;
        const created = await webhooks.create({ organizationId: orgId, projectId: null }, { url: b.url, events: b.events as string[], description: b.description ?? null });
        return reply.code(201).send(created);
      },
    );

    app.delete(
      "/organizations/:organization_id/webhooks/:id",
      {
        schema: {
          tags: TAG,
          summary: "Delete a webhook subscription",
          params: Type.Object({ organization_id: Uuid, id: Uuid }),
          response: { 204: Type.Null(), ...errors(404) },
        },
      },
      async (request, reply) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.webhooks.manage");
        await webhooks.remove({ organizationId: orgId, projectId: null }, request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
