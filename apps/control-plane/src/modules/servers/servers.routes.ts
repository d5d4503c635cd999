// Public API routes for servers (public spec 4.3): the machines projects are deployed on.
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { CursorCodec } from "../../lib/cursor.ts";
import { notFound } from "../../lib/errors.ts";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { toPage } from "../../lib/keyset.ts";
import { scopeOf } from "../../public-api/guards.ts";
import type { ServerRow, ServersRepo } from "./servers.repo.ts";

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
    status: Type.String({ description: "pending (agent never connected), online or offline" }),
    last_seen_at: Nullable(Timestamp),
  },
  { $id: "Server", title: "Server" },
);
const ServerRef = Type.Ref(Server) as unknown as typeof Server;

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
  };
}

export function serversRoutes(deps: { servers: ServersRepo; cursors: CursorCodec }): FastifyPluginAsyncTypebox {
  return async (app) => {
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
        const after = request.query.cursor ? deps.cursors.decode("servers", request.query.cursor) : undefined;
        const { rows, total } = await deps.servers.list(organizationId, request.query.limit, after);
        return toPage("servers", rows, total, request.query, deps.cursors, serverView);
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
