// Public API routes for the deliveries of an outgoing webhook subscription: the list (with
// each delivery's last attempt) and redelivery.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, Page, PageQuery, StringEnum, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import type { WebhookDeliveries } from "./webhook-deliveries.ts";
import { WEBHOOK_EVENTS } from "./webhook-events.ts";

export const SIGNING_DESCRIPTION =
  "Each delivery is an HTTPS POST with a JSON body `{id, type, created_at, organization_id, data}` (`data.deployment {id, project_id, " +
  "environment_id, kind, version, trigger, status, error_message, environment_url, tests}` for the deployment events (tests: the module tests " +
  "the deploy ran, {run, failed, errors, failures: [{test, module, kind: failure|error, traceback: [lines]}]}, null when none ran), `data.environment {id, " +
  "project_id, status, previous_status, url}` for environment.status_changed; the URLs are where the environment is served when the event " +
  "is sent, null when it has none) and the headers " +
  "`Berth-Event` (event name), `Berth-Delivery` (delivery id, the same on every try) and " +
  "`Berth-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<raw body>\" keyed with the subscription secret>`. " +
  "Verify it over the raw body, compare in constant time, and refuse a `t` older than 5 minutes. " +
  "Any 2xx answer is success; anything else (or no answer within 10 s) is tried again 3 times, after 5 to 10 s, 10 to 20 s and 20 to 40 s, " +
  "and after the last try the delivery is `failed`. A delivery can be sent again with redeliver.";

export const WebhookDelivery = Type.Object(
  {
    id: Uuid,
    subscription_id: Uuid,
    event_id: Type.String({ description: "Source event and name; unique per subscription" }),
    event_type: StringEnum(WEBHOOK_EVENTS),
    payload: Type.Object({}, { additionalProperties: true, description: "The JSON body sent" }),
    status: StringEnum(["pending", "succeeded", "failed"] as const, { description: "pending while tries remain" }),
    attempts: Type.Integer({ description: "Tries made so far" }),
    response_status: Nullable(Type.Integer({ description: "HTTP status of the last try" })),
    response_body: Nullable(Type.String({ description: "First 2 KB of the last answer" })),
    error: Nullable(Type.String({ description: "Why the last try failed" })),
    created_at: Timestamp,
    last_attempt_at: Nullable(Timestamp),
    delivered_at: Nullable(Timestamp),
  },
  { title: "WebhookDelivery" },
);

export function webhookDeliveriesRoutes(service: WebhookDeliveries): FastifyPluginAsyncTypebox {
  return async (app) => {
    const Ref = WebhookDelivery;

    app.get(
      "/webhooks/:id/deliveries",
      {
        schema: {
          tags: ["Webhooks"],
          summary: "List deliveries of a subscription",
          description: `Newest first. ${SIGNING_DESCRIPTION}`,
          params: Type.Object({ id: Uuid }),
          querystring: PageQuery,
          response: { 200: Page(Ref), ...errors(404) },
        },
      },
      async (request) => service.list(scopeOf(request), request.params.id, request.query),
    );

    app.post(
      "/webhooks/:id/deliveries/:delivery_id/redeliver",
      {
        config: { webhookWrite: true },
        schema: {
          tags: ["Webhooks"],
          summary: "Send a delivery again",
          description: `Queues the same payload again with a fresh series of tries (status back to pending). Needs a full-access key. ${SIGNING_DESCRIPTION}`,
          params: Type.Object({ id: Uuid, delivery_id: Uuid }),
          response: { 202: Ref, ...errors(404, 503) },
        },
      },
      async (request, reply) => reply.code(202).send(await service.redeliver(scopeOf(request), request.params.id, request.params.delivery_id)),
    );
  };
}
