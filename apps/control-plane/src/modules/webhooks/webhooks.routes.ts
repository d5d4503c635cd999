// Public API routes for outgoing webhook subscriptions (named in public spec 4.5 and 6;
// shapes designed here). Create, update and delete count against an extra 10/60 s limit.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, StringEnum, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import { WEBHOOK_EVENTS } from "./webhook-events.ts";
import { SIGNING_DESCRIPTION } from "./webhook-deliveries.routes.ts";
import type { WebhooksService } from "./webhooks.service.ts";

const EventName = StringEnum(WEBHOOK_EVENTS);
const fields = {
  id: Uuid,
  url: Type.String(),
  events: Type.Array(EventName),
  description: Nullable(Type.String()),
  enabled: Type.Boolean(),
  project_id: Nullable(Uuid),
  created_at: Timestamp,
  updated_at: Timestamp,
};
export const Webhook = Type.Object(fields, { $id: "Webhook", title: "Webhook" });
const WebhookRef = refTo(Webhook);
const WebhookWithSecret = Type.Object(
  {
    ...fields,
    secret: Nullable(
      Type.String({
        description:
          "Signing secret (whsec_...). Shown only in this response; stored sealed, never readable again. An idempotent replay of the " +
          "create (same X-Idempotency-Key) returns the same body with `secret: null` and the header `X-Idempotency-Withheld: secret`: " +
          "the secret is not kept for replays. A client that lost it deletes the subscription and creates another.",
      }),
    ),
  },
  { $id: "WebhookWithSecret", title: "WebhookWithSecret" },
);

const Events = Type.Array(EventName, { minItems: 1, maxItems: WEBHOOK_EVENTS.length * 2 });
const Url = Type.String({ minLength: 1, maxLength: 2048 });
const Description = Type.String({ maxLength: 500 });

export function webhooksRoutes(service: WebhooksService): FastifyPluginAsyncTypebox {
  return async (app) => {
    const writeConfig = { webhookWrite: true };

    app.post(
      "/webhooks",
      {
        config: { ...writeConfig, shownOnce: ["secret"] },
        schema: {
          tags: ["Webhooks"],
          summary: "Subscribe to events",
          description:
            "Creates a subscription. The response carries the signing secret once; it cannot be read again. " +
            `Needs a full-access key. Supports X-Idempotency-Key. ${SIGNING_DESCRIPTION}`,
          body: Type.Object(
            {
              url: Url,
              events: Events,
              description: Type.Optional(Description),
              enabled: Type.Optional(Type.Boolean({ default: true })),
              project_id: Type.Optional(Uuid),
            },
            { additionalProperties: false },
          ),
          response: { 201: WebhookWithSecret, ...errors(404) },
        },
      },
      async (request, reply) => {
        return reply.code(201).send(await service.create(scopeOf(request), { ...request.body, events: request.body.events as string[] }));
      },
    );

    app.get(
      "/webhooks",
      { schema: { tags: ["Webhooks"], summary: "List subscriptions", querystring: PageQuery, response: { 200: Page(WebhookRef), ...errors() } } },
      async (request) => service.list(scopeOf(request), request.query),
    );

    app.get(
      "/webhooks/:id",
      { schema: { tags: ["Webhooks"], summary: "Get a subscription", params: IdParams, response: { 200: WebhookRef, ...errors(404) } } },
      async (request) => service.get(scopeOf(request), request.params.id),
    );

    app.patch(
      "/webhooks/:id",
      {
        config: writeConfig,
        schema: {
          tags: ["Webhooks"],
          summary: "Update a subscription",
          description: "Omitted fields are left unchanged.",
          params: IdParams,
          body: Type.Object(
            { url: Type.Optional(Url), events: Type.Optional(Events), description: Type.Optional(Nullable(Description)), enabled: Type.Optional(Type.Boolean()) },
            { additionalProperties: false },
          ),
          response: { 200: WebhookRef, ...errors(404) },
        },
      },
      async (request) => {
        const body = request.body ?? {};
        return service.update(scopeOf(request), request.params.id, { ...body, events: body.events as string[] | undefined });
      },
    );

    app.delete(
      "/webhooks/:id",
      {
        config: writeConfig,
        schema: { tags: ["Webhooks"], summary: "Delete a subscription", params: IdParams, response: { 204: Type.Null(), ...errors(404) } },
      },
      async (request, reply) => {
        await service.remove(scopeOf(request), request.params.id);
        return reply.code(204).send(null);
      },
    );
  };
}
