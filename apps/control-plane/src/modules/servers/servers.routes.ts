// Public API routes for servers (public spec 4.3): the machines projects are deployed on.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { serverStats } from "@berth/db";
import type { CursorCodec } from "../../lib/cursor.ts";
import { notFound } from "../../lib/errors.ts";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { listPage } from "../../db/keyset.ts";
import type { FastifyRequest } from "fastify";
import { principalOf, scopeOf } from "../api-keys/key-principal.ts";
import type { Enrollment as EnrollmentService } from "../agents/enrollment.ts";
import { installCommandFor } from "./install-command.ts";
import { proxyView, ProxyView } from "../routing/routing-view.ts";
import type { ServerRow, ServersRepo } from "./servers.repo.ts";

/** A server's latest figures from its agent (the server_stats row). */
export const ServerUsage = Type.Object({
  sampled_at: Timestamp,
  cpu_percent: Type.Number(),
  ram_used_mb: Type.Integer(),
  ram_total_mb: Type.Integer(),
  disk_used_gb: Type.Number(),
  disk_total_gb: Type.Number(),
  load1: Type.Number(),
  load5: Type.Number(),
  load15: Type.Number(),
  containers_running: Type.Integer(),
  containers_total: Type.Integer(),
});

export function usageView(u: typeof serverStats.$inferSelect) {
  return {
    sampled_at: u.sampledAt.toISOString(),
    cpu_percent: u.cpuPercent,
    ram_used_mb: u.ramUsedMb,
    ram_total_mb: u.ramTotalMb,
    disk_used_gb: u.diskUsedGb,
    disk_total_gb: u.diskTotalGb,
    load1: u.load1,
    load5: u.load5,
    load15: u.load15,
    containers_running: u.containersRunning,
    containers_total: u.containersTotal,
  };
}

export const Server = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    provider: Type.String({ description: "Cloud provider name as free text" }),
    region: Nullable(Type.String()),
    cpu_cores: Type.Integer(),
    ram_mb: Type.Integer(),
    disk_gb: Type.Integer(),
    environment_count: Type.Integer({ description: "Active environments currently on this server" }),
    status: Type.String({ description: "pending (no agent enrolled yet), online (live link) or offline" }),
    last_seen_at: Nullable(Timestamp),
    agent_version: Nullable(Type.String()),
    usage: Nullable(
      Type.Object(ServerUsage.properties, { description: "Latest figures reported by the server's agent; null before the first sample" }),
    ),
    proxy: ProxyView,
  },
  { $id: "Server", title: "Server" },
);
const ServerRef = refTo(Server);

export function serverView(s: ServerRow) {
  return {
    id: s.id,
    name: s.name,
    provider: s.provider,
    region: s.region,
    cpu_cores: s.cpuCores,
    ram_mb: s.ramMb,
    disk_gb: s.diskGb,
    environment_count: s.environmentCount,
    status: s.status,
    last_seen_at: s.lastSeenAt?.toISOString() ?? null,
    agent_version: s.agentVersion,
    usage: s.stats ? usageView(s.stats) : null,
    proxy: proxyView(s.proxy),
  };
}

const Enrollment = Type.Object(
  {
    token: Nullable(
      Type.String({
        description:
          "One-time enrolment token; shown only in this response. Null in an idempotent replay (same X-Idempotency-Key, header " +
          "`X-Idempotency-Withheld`): the token is not kept for replays; create a new one.",
      }),
    ),
    expires_at: Timestamp,
    install_command: Nullable(Type.String({ description: "Run on the server to install and enrol the agent (it holds the token: null in an idempotent replay)" })),
  },
  { $id: "Enrollment", title: "Enrollment" },
);

const CreateServer = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    provider: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: "Free text, e.g. hetzner" })),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  { additionalProperties: false },
);

function withInstall(request: FastifyRequest, e: { token: string; expires_at: string }, key: string) {
  return { ...e, install_command: installCommandFor(request, e.token, key) };
}

export function serversRoutes(deps: { servers: ServersRepo; cursors: CursorCodec; enrollment: EnrollmentService }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      "/servers",
      {
        config: { orgScoped: true, shownOnce: ["enrollment.token", "enrollment.install_command"] },
        schema: {
          tags: ["Servers"],
          summary: "Add a server",
          description:
            "Registers a server and returns a one-time enrolment token (valid 1 hour) with the command that installs the agent. " +
            "The server is `pending` until its agent enrols, then `online` while the agent's link is up. Needs a full-access, organisation-scoped key.",
          body: CreateServer,
          response: { 201: Type.Object({ server: ServerRef, enrollment: Enrollment }), ...errors() },
        },
      },
      async (request, reply) => {
        const p = principalOf(request);
        const created = await deps.enrollment.createServer(p.organizationId, request.body, `api_key:${p.keyId}`);
        const row = await deps.servers.get(p.organizationId, created.serverId);
        return reply.code(201).send({ server: serverView(row!), enrollment: withInstall(request, created.enrollment, await deps.enrollment.releaseKey()) });
      },
    );

    app.post(
      "/servers/:id/enrollment-token",
      {
        config: { orgScoped: true, shownOnce: ["token", "install_command"] },
        schema: {
          tags: ["Servers"],
          summary: "Create a new enrolment token",
          description: "For (re)installing the agent. Earlier unused tokens stay valid until they expire. Needs a full-access, organisation-scoped key.",
          params: IdParams,
          response: { 201: Enrollment, ...errors(404) },
        },
      },
      async (request, reply) => {
        const p = principalOf(request);
        const token = await deps.enrollment.newToken(p.organizationId, request.params.id, `api_key:${p.keyId}`);
        return reply.code(201).send(withInstall(request, token, await deps.enrollment.releaseKey()));
      },
    );

    app.get(
      "/servers",
      {
        schema: {
          tags: ["Servers"],
          summary: "List servers",
          description: "Servers available to the organisation, newest first.",
          querystring: PageQuery,
          response: { 200: Page(ServerRef), ...errors() },
        },
      },
      async (request) => {
        const { organizationId } = scopeOf(request);
        return listPage(deps.cursors, "servers", request.query, (limit, after) => deps.servers.list(organizationId, limit, after), serverView);
      },
    );

    app.get(
      "/servers/:id",
      { schema: { tags: ["Servers"], summary: "Get a server", params: IdParams, response: { 200: ServerRef, ...errors(404) } } },
      async (request) => {
        const row = await deps.servers.get(scopeOf(request).organizationId, request.params.id);
        if (!row) throw notFound("Server");
        return serverView(row);
      },
    );
  };
}
