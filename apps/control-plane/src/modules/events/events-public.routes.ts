// POST /api/public/v1/events/tickets: a stream ticket for an API key, so a CI job can follow a
// deployment live on the same event stream (GET /api/v1/events) as the dashboard. The stream
// shows what the key may see: its organisation, or its one project (stream-tickets.ts).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Uuid } from "../../lib/http-schemas.ts";
import { principalOf } from "../api-keys/key-principal.ts";
import { TICKET_TTL_MS, type StreamTickets } from "./stream-tickets.ts";

export function eventsPublicRoutes(deps: { tickets: StreamTickets }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/events/tickets",
      {
        // Opening a stream only reads: read-only keys may.
        config: { readOnly: true },
        schema: {
          tags: ["Events"],
          summary: "Get a ticket to open the event stream",
          description:
            `A single-use ticket for \`GET /api/v1/events?organization_id=<organization_id>&ticket=<ticket>\` (the platform API's event stream, ` +
            `server-sent events; its description lists the events, their ids and how to resume with Last-Event-ID), valid ${TICKET_TTL_MS / 1000} seconds. ` +
            "The stream shows the key's organisation, or, for a project-scoped key, only its project's events; it ends when the key is revoked. " +
            "Fetch a new ticket before every reconnect. No body. Read-only keys may use it.",
          response: {
            201: Type.Object({
              ticket: Type.String({ description: "Pass as ?ticket= on GET /api/v1/events, once" }),
              organization_id: { ...Uuid, description: "Pass as ?organization_id= on GET /api/v1/events" },
              stream_url: Type.String({ description: "The stream's path with both parameters, relative to the control plane", examples: ["/api/v1/events?organization_id=…&ticket=bet_…"] }),
              expires_at: Type.String({ format: "date-time" }),
            }),
            ...errors(),
          },
        },
      },
      async (request, reply) => {
        const key = principalOf(request);
        const t = deps.tickets.issueForKey(key);
        const query = new URLSearchParams({ organization_id: key.organizationId, ticket: t.ticket });
        return reply.code(201).send({ ticket: t.ticket, organization_id: key.organizationId, stream_url: `/api/v1/events?${query}`, expires_at: t.expiresAt.toISOString() });
      },
    );
  };
}
