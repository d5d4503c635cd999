// GET /api/v1/events: an organisation's live events as server-sent events. Which events,
// how ids and resuming work, and what a client is told when its resume point is too old
// are written in the route description (and so in the OpenAPI document).
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { DomainError } from "../../lib/errors.ts";
import { errors, Uuid } from "../../lib/http-schemas.ts";
import { personOf } from "../auth/session-principal.ts";
import type { Clock } from "../../lib/clock.ts";
import type { Access } from "../auth/access.ts";
import { encodeCursor, parseLastEventId } from "./event-id.ts";
import type { EventHub } from "./event-hub.ts";
import { EVENT_RETENTION_MS, STATS_RETENTION_MS } from "./retention.ts";

const RETRY_MS = 2000;

const DESCRIPTION = `Server-sent events (\`text/event-stream\`) of one organisation, for every member of it.
EventSource clients, which cannot set headers, may pass the session token as \`?access_token=\`.

Events (\`event:\` name, \`data:\` one JSON object):
- \`deployment.log\`: \`id, deployment_id, level, message, step, timestamp\`, for every log line written for a deployment.
- \`migration_progress\`: \`migration_id, status, progress_percent, current_step, error_message\`.
- \`deployment.status\`: \`deployment_id, project_id, environment_id, kind, version, trigger, status, previous_status, progress_percent, current_step, error_message, timestamp\`, on every status or step change of an operation.
- \`environment.status\`: \`environment_id, project_id, status, previous_status, timestamp\`.
- \`server.stats\`: \`server_id, ts, cpu_percent, ram_used_mb, ram_total_mb, disk_used_gb, disk_total_gb, load1, load5, load15, containers_running, containers_total\`.
- \`server.status\`: \`server_id, status, previous_status, timestamp\`, when a server is added or goes online or offline.
- \`reset\`: \`reason, message\`: the stream could not continue from \`Last-Event-ID\` (see below); reload state from the API, then carry on.

Organisation owners and admins (and portal admins) receive everything; other members receive the events of the
projects they hold a role in, plus \`server.stats\`, \`server.status\` and \`migration_progress\`. Roles are read when the stream opens.
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

export function eventsRoutes(deps: { hub: EventHub; access: Pick<Access, "requireOrg" | "visibleProjectIds">; clock: Clock }): FastifyPluginAsyncTypebox {
  const { hub, access, clock } = deps;
  return async (app) => {
    app.get(
      "/events",
      {
        // A HEAD would open a stream with nowhere to send it.
        exposeHeadRoute: false,
        schema: {
          tags: ["Events"],
          summary: "Live events of an organisation (server-sent events)",
          description: DESCRIPTION,
          querystring: Type.Object({
            organization_id: Type.Optional(Uuid),
            organizationId: Type.Optional({ ...Uuid, description: "Same as organization_id" }),
            last_event_id: Type.Optional(Type.String({ maxLength: 200, description: "Same as the Last-Event-ID header" })),
            access_token: Type.Optional(Type.String({ maxLength: 200, description: "The session token, for clients that cannot send Authorization" })),
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
        const person = personOf(request);
        const q = request.query;
        if (q.organization_id && q.organizationId && q.organization_id !== q.organizationId) {
          throw new DomainError("validation_error", "organization_id and organizationId differ; give one");
        }
        const orgId = q.organization_id ?? q.organizationId;
        if (!orgId) throw new DomainError("validation_error", "Name the organisation: ?organization_id=<uuid>", [{ path: "querystring/organization_id", message: "is required" }]);
        const role = await access.requireOrg(person, orgId, "org.events.subscribe");
        const lastId = request.headers["last-event-id"] ?? q.last_event_id;
        const resume = lastId ? parseLastEventId(lastId) : null;
        const visible = await access.visibleProjectIds(person, orgId, role);

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

        reply.hijack();
        const res = reply.raw;
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
        const sub = await hub.subscribe(orgId, cursor, visible, {
          write: (chunk) => {
            if (open()) res.write(chunk);
          },
          buffered: () => res.writableLength,
          end: () => {
            if (open()) res.end();
          },
        }, { userId: person.userId, sessionId: person.sessionId });
        res.on("error", () => sub.close());
        if (res.closed || res.destroyed) sub.close();
        else res.on("close", () => sub.close());
      },
    );
  };
}
