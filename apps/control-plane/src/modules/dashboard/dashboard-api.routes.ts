// Platform API routes the dashboard is built on: the capacity view of an organisation's
// servers and their recent figures, adding a server (with its install command), the
// projects and environments a person can see, webhook subscriptions, and restart / stop /
// start of an environment. Every check goes through services.access.
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import type { PlatformDeps } from "../../platform-api/index.ts";
import { personOf } from "../auth/session-principal.ts";
import { notFound } from "../../lib/errors.ts";
import { errors, Nullable, PageQuery, Page, StringEnum, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { can, higher, orgRole, permissionsOf, projectRole, type Role } from "../auth/permissions.ts";
import { Webhook } from "../webhooks/webhooks.routes.ts";
import { WEBHOOK_EVENTS } from "../webhooks/webhook-events.ts";
import { capacityOf, DEFAULT_ENVIRONMENT } from "./capacity.ts";
import { createDashboardRepo, type CapacityServerRow, type PlacedEnvironmentRow } from "./dashboard.repo.ts";

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
const DashboardEnvironment = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Type.String(),
  git_branch: Type.String(),
  domain: Nullable(Type.String()),
  auto_deploy: Type.Boolean(),
  server_id: Nullable(Uuid),
  server_name: Nullable(Type.String()),
  cpu_cores: num,
  ram_mb: num,
  disk_gb: num,
  last_deployment: Nullable(Type.Object({ id: Uuid, kind: Type.String(), status: Type.String(), version: Type.Integer(), created_at: Timestamp })),
});
const DashboardProject = Type.Object({
  id: Uuid,
  name: Type.String(),
  erp_version: Nullable(Type.String()),
  role: Type.String(),
  permissions: Type.Array(Type.String()),
  environments: Type.Array(DashboardEnvironment),
});
const WebhookRef = Type.Ref(Webhook) as unknown as typeof Webhook;

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The origin servers reach this control plane at, as the browser did (behind a proxy: X-Forwarded-*). */
function originOf(request: FastifyRequest): string {
  const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(",")[0]?.trim();
  const proto = first(request.headers["x-forwarded-proto"]) ?? request.protocol;
  const host = first(request.headers["x-forwarded-host"]) ?? request.headers.host ?? "localhost";
  return `${proto === "https" ? "https" : "http"}://${host}`;
}

function serverView(s: CapacityServerRow, placed: PlacedEnvironmentRow[], visible: (projectId: string) => boolean) {
  const allocated = { cpu_cores: 0, ram_mb: 0, disk_gb: 0 };
  for (const e of placed) {
    allocated.cpu_cores += e.cpu_cores;
    allocated.ram_mb += e.ram_mb;
    allocated.disk_gb += e.disk_gb;
  }
  const stats =
    s.sampled_at === null
      ? null
      : {
          sampled_at: iso(s.sampled_at)!,
          cpu_percent: s.cpu_percent!,
          ram_used_mb: s.ram_used_mb!,
          ram_total_mb: s.ram_total_mb!,
          disk_used_gb: s.disk_used_gb!,
          disk_total_gb: s.disk_total_gb!,
          load1: s.load1!,
          load5: s.load5!,
          load15: s.load15!,
          containers_running: s.containers_running!,
          containers_total: s.containers_total!,
        };
  const live = stats && { ramUsedMb: stats.ram_used_mb, ramTotalMb: stats.ram_total_mb, diskUsedGb: stats.disk_used_gb, diskTotalGb: stats.disk_total_gb };
  return {
    id: s.id,
    name: s.name,
    hostname: s.hostname,
    status: s.status,
    last_seen_at: iso(s.last_seen_at),
    agent_version: s.agent_version,
    cpu_cores: s.cpu_cores,
    ram_mb: s.ram_mb,
    disk_gb: s.disk_gb,
    stats,
    environment_count: placed.length,
    environments: placed.filter((e) => visible(e.project_id)).map(({ server_id: _s, ...e }) => e),
    allocated,
    capacity: capacityOf(
      { cpuCores: s.cpu_cores, ramMb: s.ram_mb, diskGb: s.disk_gb },
      { cpuCores: allocated.cpu_cores, ramMb: allocated.ram_mb, diskGb: allocated.disk_gb },
      live,
    ),
  };
}

export function dashboardApiRoutes(deps: PlatformDeps): FastifyPluginAsyncTypebox {
  const { services } = deps;
  const { access } = services;
  const repo = createDashboardRepo(deps.pool);
  const TAG = ["Dashboard"];

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
        const [servers, placed] = await Promise.all([repo.servers(orgId), repo.placedEnvironments(orgId)]);
        const mine = can(role, "org.projects.manage") ? null : new Set((await repo.projects(orgId, p.userId, false)).map((r) => r.id));
        const byServer = new Map<string, PlacedEnvironmentRow[]>();
        for (const e of placed) {
          const list = byServer.get(e.server_id) ?? [];
          list.push(e);
          byServer.set(e.server_id, list);
        }
        const visible = (projectId: string) => mine === null || mine.has(projectId);
        return { data: servers.map((s) => serverView(s, byServer.get(s.id) ?? [], visible)), default_environment: { ...DEFAULT_ENVIRONMENT } };
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
        if (!(await repo.server(orgId, serverId))) throw notFound("Server");
        const minutes = request.query.minutes;
        const since = new Date(deps.clock.now().getTime() - minutes * 60_000);
        const points = await repo.statsHistory(orgId, serverId, since);
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
        const out = await services.enrollment.createServer(orgId, { name }, p.userId);
        const command = `curl -fsSL ${originOf(request)}/install.sh | sudo sh -s -- --token ${out.enrollment.token}`;
        return reply.code(201).send({ server: { id: out.serverId, name, status: "pending" as const }, enrollment: out.enrollment, install_command: command });
      },
    );

    app.get(
      "/organizations/:organization_id/projects",
      {
        schema: {
          tags: TAG,
          summary: "Projects and environments I can see",
          description: "Organisation owners and admins see every project; others the projects they hold a role in. Each project carries the caller's role and permission codes there.",
          params: OrgParams,
          response: { 200: Type.Object({ data: Type.Array(DashboardProject) }), ...errors(404) },
        },
      },
      async (request) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        const role = await access.requireOrg(p, orgId, "org.view");
        const projects = await repo.projects(orgId, p.userId, can(role, "org.projects.manage"));
        const envs = await repo.environments(projects.map((pr) => pr.id));
        return {
          data: projects.map((pr) => {
            const r: Role = p.isPortalAdmin ? "portal_admin" : (higher(orgRole(pr.org_role), projectRole(pr.project_role)) ?? "project_member");
            return {
              id: pr.id,
              name: pr.name,
              erp_version: pr.erp_version,
              role: r,
              permissions: permissionsOf(r),
              environments: envs
                .filter((e) => e.project_id === pr.id)
                .map((e) => ({
                  id: e.id,
                  name: e.name,
                  status: e.status,
                  git_branch: e.git_branch,
                  domain: e.domain,
                  auto_deploy: e.auto_deploy,
                  server_id: e.server_id,
                  server_name: e.server_name,
                  cpu_cores: e.cpu_cores,
                  ram_mb: e.ram_mb,
                  disk_gb: e.disk_gb,
                  last_deployment:
                    e.last_id === null
                      ? null
                      : { id: e.last_id, kind: e.last_kind!, status: e.last_status!, version: e.last_version!, created_at: iso(e.last_created_at)! },
                })),
            };
          }),
        };
      },
    );

    app.get(
      "/organizations/:organization_id/webhooks",
      {
        schema: { tags: TAG, summary: "List webhook subscriptions", params: OrgParams, querystring: PageQuery, response: { 200: Page(WebhookRef), ...errors(404) } },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.webhooks.manage");
        return services.webhooks.list({ organizationId: orgId, projectId: null }, request.query);
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
        const created = await services.webhooks.create({ organizationId: orgId, projectId: null }, { url: b.url, events: b.events as string[], description: b.description ?? null });
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
        await services.webhooks.remove({ organizationId: orgId, projectId: null }, request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/environments/:env_id/actions/:action",
      {
        schema: {
          tags: TAG,
          summary: "Restart, stop or start an environment",
          description: "Queues the operation for the environment's agent. 409 while another operation runs, or when the environment is not in the state the action needs.",
          params: Type.Object({ env_id: Uuid, action: Type.Union([Type.Literal("restart"), Type.Literal("stop"), Type.Literal("start")]) }),
          response: {
            202: Type.Object({ id: Uuid, environment_id: Uuid, kind: Type.String(), status: Type.String(), created_at: Timestamp }),
            ...errors(404, 409),
          },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const envId = request.params.env_id;
        const projectId = await repo.environmentProject(envId);
        if (!projectId) throw notFound("Environment");
        const a = await access.requireProject(p, projectId, "project.environments.operate", "Environment");
        const row = await services.deployments.requestAction({ organizationId: a.organizationId, projectId }, envId, request.params.action, { userId: p.userId, apiKeyId: null });
        return reply.code(202).send({ id: row.id, environment_id: envId, kind: row.kind, status: row.status, created_at: row.createdAt.toISOString() });
      },
    );
  };
}
