// GET /api/v1/events: an organisation's live events as server-sent events. Which events,
// how ids and resuming work, and what a client is told when its resume point is too old
// are written in the route description (and so in the OpenAPI document).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../lib/errors.ts";
import { hijack } from "../../lib/request-id.ts";
import { errors, Uuid } from "../../lib/http-schemas.ts";
import { personOf } from "../auth/session-principal.ts";
import type { Clock } from "../../lib/clock.ts";
import type { Access } from "../auth/access.ts";
import { encodeCursor, parseLastEventId } from "./event-id.ts";
import type { EventHub } from "./event-hub.ts";
import { EVENT_RETENTION_MS, STATS_RETENTION_MS } from "./retention.ts";
import { TICKET_TTL_MS, type StreamTickets, type StreamViewer } from "./stream-tickets.ts";
import type { StreamLimits } from "./stream-limits.ts";

const RETRY_MS = 2000;

const DESCRIPTION = `Server-sent events (\`text/event-stream\`) of one organisation, for every member of it.
Authenticate with \`Authorization: Bearer <session token>\`, or, for EventSource clients, which cannot set headers, with
\`?ticket=\`: a stream ticket from \`POST /api/v1/events/tickets\`, valid ${TICKET_TTL_MS / 1000} seconds, for one stream of the
organisation it was issued for (fetch a new one before every reconnect). An API key gets its tickets from
\`POST /api/public/v1/events/tickets\`: its stream shows the key's organisation, or only its project's events for a
project-scoped key (not even the organisation-wide ones below), and ends when the key is revoked. A session token in the query (\`?access_token=\`)
is refused (401 \`query_token_refused\`): URLs end up in logs. A used, expired or foreign ticket is a 401 \`invalid_stream_ticket\`.
At most a few streams may be open per organisation and per person (429 \`too_many_streams\` with \`Retry-After\`).

Events (\`event:\` name, \`data:\` one JSON object):
- \`deployment.log\`: \`id, deployment_id, level, message, step, timestamp\`, for every log line written for a deployment.
- \`migration_progress\`: \`migration_id, status, progress_percent, current_step, error_message\`.
- \`deployment.status\`: \`deployment_id, project_id, environment_id, kind, version, trigger, status, previous_status, progress_percent, current_step, error_message, timestamp\`, on every status or step change of an operation.
- \`environment.status\`: \`environment_id, project_id, status, previous_status, timestamp\`.
- \`server.stats\`: \`server_id, ts, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb, load1, load5, load15, containers_running, containers_total\`.
- \`server.status\`: \`server_id, status, previous_status, timestamp\`, when a server is added or goes online or offline.
- \`server.proxy\`: \`server_id, running, image, public_addresses, error, checked_at\`, when the server's reverse proxy changes (as its agent reports it).
- \`environment.routing\`: \`environment_id, project_id, mode, certificate {status, not_after, error, checked_at}, routing {mode, domains [{name, dns, certificate}], checked_at}\` (\`mode\` and \`routing\` null: no route), when an environment's route, DNS answer or certificate changes.
- \`backup.failed\`: \`environment_id, project_id, backup_id, backup_type, reason, at, timestamp\`, when a manual or scheduled backup fails.
- \`backup.missed\`: \`environment_id, project_id, slot_at, reason, at, timestamp\`, when a scheduled slot passes its grace period (2 hours) without a completed backup.
- \`reset\`: \`reason, message\`: the stream could not continue from \`Last-Event-ID\` (see below); reload state from the API, then carry on.

Organisation owners and admins (and portal admins) receive everything; other members receive the events of the
projects they hold a role in, plus \`server.stats\`, \`server.status\`, \`server.proxy\` and \`migration_progress\`. Roles are read when the stream opens.
The server ends the stream as soon as the caller's access changes: removed from the organisation, a role changed or a project
role removed, the session signed out or revoked (on every replica, within moments; within a minute when the session expires).
Reconnecting is checked afresh: a revoked session gets 401, a removed member 404, a changed role its new view.

Every event has an opaque \`id\`; the first line of the stream is an \`id\` too. Reconnect with the header
\`Last-Event-ID\` (EventSource does so by itself; \`?last_event_id=\` also works) and the stream continues exactly
after that event, with nothing skipped or repeated, even across replicas. A malformed id is a 400
\`invalid_last_event_id\`. Log lines can be resumed for ${EVENT_RETENTION_MS / 86_400_000} days, other events are kept as
long, except \`server.stats\`, kept ${STATS_RETENTION_MS / 3_600_000} hours. An id older than ${EVENT_RETENTION_MS / 86_400_000} days, or one this server never
issued, gets an \`event: reset\` (reason \`resume_point_expired\` or \`unknown_resume_point\`) and the stream starts from now.

A comment line (\`: keep-alive\`) is sent every 15 seconds so proxies keep the connection open; \`retry: ${RETRY_MS}\` sets the reconnect delay.`;

const OrgQuery = {
  organization_id: Type.Optional(Uuid),
  organizationId: Type.Optional({ ...Uuid, description: "Same as organization_id" }),
};

function orgOf(q: { organization_id?: string | undefined; organizationId?: string | undefined }): string {
  if (q.organization_id && q.organizationId && q.organization_id !== q.organizationId) {
    throw new DomainError("validation_error", "organization_id and organizationId differ; give one");
  }
  const orgId = q.organization_id ?? q.organizationId;
  if (!orgId) throw new DomainError("validation_error", "Name the organisation: ?organization_id=<uuid>", [{ path: "querystring/organization_id", message: "is required" }]);
  return orgId;
}

export function eventsRoutes(deps: {
  hub: EventHub;
  access: Pick<Access, "requireOrg" | "visibleProjectIds">;
  clock: Clock;
  tickets: StreamTickets;
  limits: StreamLimits;
}): FastifyPluginAsyncTypebox {
  const { hub, access, clock, tickets, limits } = deps;
  return async (app) => {
    app.post(
      "/events/tickets",
      {
        schema: {
          tags: ["Events"],
          summary: "Get a ticket to open the event stream",
          description: `A single-use ticket for \`GET /api/v1/events?organization_id=…&ticket=…\`, valid ${TICKET_TTL_MS / 1000} seconds, for the organisation named here (in the body or the query). For EventSource clients, which cannot send the session token as a header.`,
          querystring: Type.Object(OrgQuery),
          body: Type.Optional(Type.Object(OrgQuery, { additionalProperties: false })),
          response: {
            201: Type.Object({
              ticket: Type.String({ description: "Pass as ?ticket= on GET /api/v1/events, once" }),
              expires_at: Type.String({ format: "date-time" }),
            }),
            ...errors(404),
          },
        },
      },
      async (request, reply) => {
        const person = personOf(request);
        const orgId = orgOf({ ...request.query, ...(request.body ?? {}) });
        await access.requireOrg(person, orgId, "org.events.subscribe");
        const t = tickets.issue(person, orgId);
        return reply.code(201).send({ ticket: t.ticket, expires_at: t.expiresAt.toISOString() });
      },
    );

    app.get(
      "/events",
      {
        // A HEAD would open a stream with nowhere to send it.
        exposeHeadRoute: false,
        // Session auth lets ?ticket= through to this route, which redeems it.
        config: { streamTicket: true },
        schema: {
          tags: ["Events"],
          summary: "Live events of an organisation (server-sent events)",
          description: DESCRIPTION,
          querystring: Type.Object({
            ...OrgQuery,
            last_event_id: Type.Optional(Type.String({ maxLength: 200, description: "Same as the Last-Event-ID header" })),
            ticket: Type.Optional(Type.String({ maxLength: 400, description: "A stream ticket (POST /api/v1/events/tickets), for clients that cannot send Authorization" })),
          }),
          headers: Type.Object({ "last-event-id": Type.Optional(Type.String({ maxLength: 200 })) }),
          response: {
            200: {
              description: "The event stream; it stays open until the client or the server closes it.",
              content: { "text/event-stream": { schema: Type.String({ description: "id:, event: and data: lines, one blank line after each event" }) } },
            },
            ...errors(404),
          },
        },
      },
      async (request, reply) => {
        const q = request.query;
        const orgId = orgOf(q);
        const viewer: StreamViewer = !request.person && q.ticket !== undefined ? await tickets.redeem(q.ticket, orgId) : { kind: "session", person: personOf(request) };
        // A person sees what their roles allow (read now); an API key its organisation, or its one project.
        let visible: Set<string> | null;
        if (viewer.kind === "session") {
          const role = await access.requireOrg(viewer.person, orgId, "org.events.subscribe");
          visible = await access.visibleProjectIds(viewer.person, orgId, role);
        } else {
          visible = viewer.projectId ? new Set([viewer.projectId]) : null;
        }
        const lastId = request.headers["last-event-id"] ?? q.last_event_id;
        const resume = lastId ? parseLastEventId(lastId) : null;

        const start = await hub.startPosition(resume);
        let cursor = start.cursor;
        let reset: { reason: string; message: string } | null = null;
        if (start.unknown) {
          reset = { reason: "unknown_resume_point", message: "Last-Event-ID is not a position of this stream; reload state, the stream continues from now" };
        } else if (resume && resume.at * 1000 < clock.now().getTime() - EVENT_RETENTION_MS) {
          cursor = (await hub.startPosition(null)).cursor;
          reset = { reason: "resume_point_expired", message: "Events after Last-Event-ID are no longer kept; reload state, the stream continues from now" };
        }
        await hub.ready();

        const release = limits.acquire(orgId, viewer.kind === "session" ? viewer.person.userId : `api_key:${viewer.keyId}`);
        hijack(request, reply);
        const res = reply.raw;
        res.once("close", release);
        if (res.destroyed) release();
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache, no-transform",
          connection: "keep-alive",
          "x-accel-buffering": "no",
        });
        request.raw.socket.setNoDelay(true);
        const id = encodeCursor(cursor);
        res.write(reset ? `retry: ${RETRY_MS}\nid: ${id}\nevent: reset\ndata: ${JSON.stringify(reset)}\n\n` : `retry: ${RETRY_MS}\nid: ${id}\n\n`);
        const open = () => !res.destroyed && !res.writableEnded;
        const owner = viewer.kind === "session" ? { userId: viewer.person.userId, sessionId: viewer.person.sessionId } : undefined;
        const key = viewer.kind === "api_key" ? { keyId: viewer.keyId, orgWide: viewer.projectId === null } : undefined;
        const sub = await hub.subscribe(orgId, cursor, visible, {
          write: (chunk) => {
            if (open()) res.write(chunk);
          },
          buffered: () => res.writableLength,
          end: () => {
            if (open()) res.end();
          },
        }, owner, key);
        res.on("error", () => sub.close());
        if (res.closed || res.destroyed) sub.close();
        else res.on("close", () => sub.close());
      },
    );
  };
}
