// Platform API routes of servers, for the dashboard: the capacity view of an organisation's
// servers and their recent figures, and adding a server with its install command.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { Clock } from "../../lib/clock.ts";
import { notFound } from "../../lib/errors.ts";
import { errors, Nullable, StringEnum, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Enrollment } from "../agents/enrollment.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { installCommandFor } from "./install-command.ts";
import { ProxyView } from "../routing/routing-view.ts";
import { capacityServerView, DEFAULT_ENVIRONMENT } from "./capacity.ts";
import type { PlacedEnvironmentRow, ServersRepo } from "./servers.repo.ts";

const TAG = ["Dashboard"];
const OrgParams = Type.Object({ organization_id: Uuid });
const num = Type.Number();
const Figures = Type.Object({
  sampled_at: Timestamp,
  cpu_percent: num,
  ram_used_mb: num,
  ram_total_mb: num,
  disk_used_gb: num,
  disk_total_gb: num,
  load1: num,
  load5: num,
  load15: num,
  containers_running: Type.Integer(),
  containers_total: Type.Integer(),
});
const PlacedEnvironment = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Type.String(),
  project_id: Uuid,
  project_name: Type.String(),
  cpu_cores: num,
  ram_mb: num,
  disk_gb: num,
});
const CapacityServer = Type.Object({
  id: Uuid,
  name: Type.String(),
  hostname: Nullable(Type.String()),
  status: StringEnum(["pending", "online", "offline"] as const, { description: "pending: never connected; online: its agent holds a live link" }),
  last_seen_at: Nullable(Timestamp),
  agent_version: Nullable(Type.String()),
  cpu_cores: num,
  ram_mb: num,
  disk_gb: num,
  stats: Nullable(Figures),
  proxy: ProxyView,
  environment_count: Type.Integer({ description: "Active environments placed on the server, all projects" }),
  environments: Type.Array(PlacedEnvironment, { description: "Those of them in projects the caller can see" }),
  allocated: Type.Object({ cpu_cores: num, ram_mb: num, disk_gb: num }),
  capacity: Type.Object({
    free_cpu_cores: num,
    free_ram_mb: num,
    free_disk_gb: num,
    fits_default: Type.Integer({ description: "How many default-size environments still fit" }),
    room: StringEnum(["room", "full", "unknown"] as const),
  }),
});
const StatsHistory = Type.Object({
  server_id: Uuid,
  minutes: Type.Integer(),
  points: Type.Array(
    Type.Object({ ts: Timestamp, cpu_percent: num, ram_used_mb: num, ram_total_mb: num, disk_used_gb: num, disk_total_gb: num, load1: num }),
  ),
});

export function serversPlatformRoutes(deps: {
  servers: Pick<ServersRepo, "withFigures" | "placedEnvironments" | "exists" | "statsHistory">;
  enrollment: Pick<Enrollment, "createServer" | "releaseKey">;
  access: Pick<Access, "requireOrg" | "visibleProjectIds">;
  clock: Clock;
}): FastifyPluginAsyncTypebox {
  const { servers, access } = deps;
  return async (app) => {
    app.get(
      "/organizations/:organization_id/servers",
      {
        schema: {
          tags: TAG,
          summary: "Capacity of the organisation's servers",
          description: `Every server with its latest figures, live status, the environments on it and what they were given, and how many default-size environments (${DEFAULT_ENVIRONMENT.cpu_cores} core, ${DEFAULT_ENVIRONMENT.ram_mb} MB, ${DEFAULT_ENVIRONMENT.disk_gb} GB) still fit, bounded by both allocation and live usage.`,
          params: OrgParams,
          response: { 200: Type.Object({ data: Type.Array(CapacityServer), default_environment: Type.Object({ cpu_cores: num, ram_mb: num, disk_gb: num }) }), ...errors(404) },
        },
      },
      async (request) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        const role = await access.requireOrg(p, orgId, "org.servers.list");
        const [rows, placed, mine] = await Promise.all([servers.withFigures(orgId), servers.placedEnvironments(orgId), access.visibleProjectIds(p, orgId, role)]);
        const byServer = new Map<string, PlacedEnvironmentRow[]>();
        for (const e of placed) {
          const list = byServer.get(e.server_id) ?? [];
          list.push(e);
          byServer.set(e.server_id, list);
        }
        const visible = (projectId: string) => mine === null || mine.has(projectId);
        return { data: rows.map((s) => capacityServerView(s, byServer.get(s.id) ?? [], visible)), default_environment: { ...DEFAULT_ENVIRONMENT } };
      },
    );

    app.get(
      "/organizations/:organization_id/servers/:server_id/stats",
      {
        schema: {
          tags: TAG,
          summary: "Recent figures of one server",
          description: "The server's samples of the last `minutes` (at most 360), oldest first, for its history chart.",
          params: Type.Object({ organization_id: Uuid, server_id: Uuid }),
          querystring: Type.Object({ minutes: Type.Integer({ minimum: 1, maximum: 360, default: 60 }) }, { additionalProperties: false }),
          response: { 200: StatsHistory, ...errors(404) },
        },
      },
      async (request) => {
        const { organization_id: orgId, server_id: serverId } = request.params;
        await access.requireOrg(personOf(request), orgId, "org.servers.list");
        if (!(await servers.exists(orgId, serverId))) throw notFound("Server");
        const minutes = request.query.minutes;
        const since = new Date(deps.clock.now().getTime() - minutes * 60_000);
        const points = await servers.statsHistory(orgId, serverId, since);
        return { server_id: serverId, minutes, points };
      },
    );

    app.post(
      "/organizations/:organization_id/servers",
      {
        schema: {
          tags: TAG,
          summary: "Add a server",
          description: "Creates the server and a one-time enrolment token (valid one hour), with the command that installs and enrols the agent.",
          params: OrgParams,
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
          response: {
            201: Type.Object({
              server: Type.Object({ id: Uuid, name: Type.String(), status: Type.Literal("pending") }),
              enrollment: Type.Object({ token: Type.String({ description: "Shown once" }), expires_at: Timestamp }),
              install_command: Type.String(),
            }),
            ...errors(404),
          },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        await access.requireOrg(p, orgId, "org.servers.manage");
        const name = request.body.name.trim() || "server";
        const out = await deps.enrollment.createServer(orgId, { name }, p.userId);
        // The origin as the browser reached it (request.protocol and host follow X-Forwarded-*
        // from trusted proxies only, BERTH_TRUST_PROXY); installCommandFor refuses
        // (invalid_host) a Host that is not a plain host[:port].
        const command = installCommandFor(request, out.enrollment.token, await deps.enrollment.releaseKey());
        return reply.code(201).send({ server: { id: out.serverId, name, status: "pending" as const }, enrollment: out.enrollment, install_command: command });
      },
    );
  };
}
