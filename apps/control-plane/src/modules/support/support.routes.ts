// Platform API routes of the support console (portal admins) and of the audit log that
// the customer's owners read. Routes parse, check permissions and answer; the rules live
// in support.service.ts and audit-log.repo.ts.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { notFound } from "../../lib/errors.ts";
import { errors, Nullable, Page, PageQuery, StringEnum, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import { personOf } from "../auth/session-principal.ts";
import type { Access } from "../auth/access.ts";
import { ServerUsage } from "../servers/servers.routes.ts";
import { auditEntryDetail, type AuditLogRepo } from "./audit-log.repo.ts";
import { DEFAULT_TAIL_LINES, SUPPORT_COMMANDS, type Support, type SupportCommand } from "./support.service.ts";

const SUPPORT = ["Support"];
const AUDIT = ["Audit log"];

const Outcome = Type.Object({
  state: Type.String({ description: "requested, refused, pending, running, succeeded, failed, rejected, expired or cancelled" }),
  summary: Type.String({ description: "One line: what happened" }),
});

export const AuditEntry = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    created_at: Timestamp,
    actor: Nullable(Type.Object({ id: Uuid, email: Type.String(), name: Type.String() })),
    action: Type.String({
      description:
        "support.<command type> for the support console's commands (e.g. support.restart, support.logs.tail); " +
        "portal.<method> for any other platform API request a portal administrator made in this organisation (e.g. portal.post, portal.get); " +
        "environment.stage and environment.promote for an environment's stage changes (the result's summary says what changed; an API key's id, when a key did it)",
    }),
    target: Type.Object({
      type: Type.String({ description: "environment or server; request for a portal administrator's request, whose id is \"<METHOD> <path>\"" }),
      id: Type.String(),
      name: Nullable(Type.String()),
    }),
    reason: Nullable(Type.String()),
    command_id: Nullable(Uuid),
    deployment_id: Nullable(Uuid),
    result: Outcome,
  },
  { $id: "AuditEntry", title: "AuditEntry" },
);
const AuditEntryRef = refTo(AuditEntry);
const AuditEntryDetail = Type.Object({
  ...AuditEntry.properties,
  output: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: "What the command returned: `lines` for logs.tail, the report for diagnostics" })),
});

const CommandSummary = Type.Object({
  command_id: Uuid,
  seq: Type.Integer(),
  type: Type.String(),
  state: Type.String({ description: "pending, accepted, rejected, expired, succeeded or failed" }),
  issued_by: Type.String({ description: "user:<id>, api_key:<id> or system:<job>" }),
  deployment_id: Nullable(Uuid),
  created_at: Timestamp,
  accepted_at: Nullable(Timestamp),
  completed_at: Nullable(Timestamp),
  summary: Type.String(),
  error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
});

const ServerDetail = Type.Object({
  id: Uuid,
  name: Type.String(),
  hostname: Nullable(Type.String()),
  provider: Type.String(),
  region: Nullable(Type.String()),
  created_at: Timestamp,
  deleted_at: Nullable(Timestamp),
  organization: Type.Object({ id: Uuid, name: Type.String(), plan: Type.String() }),
  agent: Type.Object({
    state: StringEnum(["pending", "online", "offline"] as const, { description: "pending: never enrolled; online: the link is up and the agent was heard from recently" }),
    connected_at: Nullable(Timestamp),
    last_seen_at: Nullable(Timestamp),
    enrolled_at: Nullable(Timestamp),
    agent_version: Nullable(Type.String()),
    os: Nullable(Type.String()),
    arch: Nullable(Type.String()),
    docker_version: Nullable(Type.String()),
  }),
  stats: Nullable(ServerUsage),
  environments: Type.Array(Type.Object({ id: Uuid, name: Type.String(), status: Type.String(), project_id: Uuid, project_name: Type.String(), is_active: Type.Boolean() })),
  recent_commands: Type.Array(CommandSummary, { description: "The last 50, newest first" }),
});

const CommandDetail = Type.Object({
  ...CommandSummary.properties,
  server_id: Uuid,
  organization_id: Uuid,
  params: Type.Record(Type.String(), Type.Unknown(), {
    description:
      "The command's parameters that staff may see, per command type (an allow-list): a field not on it is absent. Never shown: passwords " +
      "(admin_passwd, admin_login.password), tokens and keys (add-on repositories' token and ssh_private_key, a backup's upload token), " +
      "signed download links (a restore's source.path, a migration archive's archive.path), environment variable values (env keeps the names, " +
      "each value \"[redacted]\") and credentials in repository URLs. Commands recorded before the allow-list show {}",
  }),
  expires_at: Timestamp,
  result: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: "What the agent returned: `lines` for logs.tail, the report for diagnostics" })),
  audit_entry: Nullable(AuditEntryRef),
});

const SearchResult = Type.Object({
  organizations: Type.Array(Type.Object({ id: Uuid, name: Type.String(), plan: Type.String() })),
  servers: Type.Array(
    Type.Object({ id: Uuid, name: Type.String(), hostname: Nullable(Type.String()), status: Type.String(), organization_id: Uuid, organization_name: Type.String() }),
  ),
  environments: Type.Array(
    Type.Object({
      id: Uuid,
      name: Type.String(),
      status: Type.String(),
      organization_id: Uuid,
      organization_name: Type.String(),
      project_id: Uuid,
      project_name: Type.String(),
      server_id: Nullable(Uuid),
    }),
  ),
});

const IssueBody = Type.Object(
  {
    type: StringEnum(SUPPORT_COMMANDS, { description: "Only these: there is no way to send a shell command" }),
    environment_id: Type.Optional(Uuid),
    lines: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: `logs.tail only: how many lines (default ${DEFAULT_TAIL_LINES})` })),
    reason: Type.String({ minLength: 5, maxLength: 1000, description: "Why; shown to the organisation's owners in their audit log" }),
  },
  { additionalProperties: false },
);
const Issued = Type.Object({
  audit_entry_id: Uuid,
  command_id: Nullable(Uuid),
  deployment_id: Nullable(Uuid),
});

export function supportRoutes(deps: { support: Support; audit: AuditLogRepo; access: Pick<Access, "requireOrg" | "requirePortal"> }): FastifyPluginAsyncTypebox {
  const { support, audit, access } = deps;

  return async (app) => {
    app.addSchema(AuditEntry);
    // Every support route is for portal admins only; checked before anything is parsed.
    app.addHook("preValidation", async (request) => {
      if (request.routeOptions.url?.startsWith(`${app.prefix}/support`)) access.requirePortal(personOf(request), "support.console");
    });

    app.get(
      "/support/search",
      {
        schema: {
          tags: SUPPORT,
          summary: "Find organisations, servers and environments",
          description: "Matches names, server hostnames and ids (any part). At most 20 of each kind. Portal admins only.",
          querystring: Type.Object({ q: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
          response: { 200: SearchResult, ...errors() },
        },
      },
      async (request) => support.search(request.query.q),
    );

    app.get(
      "/support/servers/:server_id",
      {
        schema: {
          tags: SUPPORT,
          summary: "A server as support sees it",
          description: "Its organisation, its agent (link state, versions), latest figures, environments and last 50 commands. Portal admins only.",
          params: Type.Object({ server_id: Uuid }),
          response: { 200: ServerDetail, ...errors(404) },
        },
      },
      async (request) => support.server(request.params.server_id),
    );

    app.post(
      "/support/servers/:server_id/commands",
      {
        schema: {
          tags: SUPPORT,
          summary: "Issue a command to a server's agent",
          description:
            "restart, stop, start, redeploy and backup run as ordinary operations of the environment (one at a time; 409 while another runs); " +
            "logs.tail (last `lines` lines of the ERP container) and diagnostics are signed commands of their own: poll GET /support/commands/{command_id}. " +
            "The request is written to the organisation's audit log with the reason before it is attempted, refused or not.",
          params: Type.Object({ server_id: Uuid }),
          body: IssueBody,
          response: { 202: Issued, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        // The schema's enum has already refused any other type.
        const issued = await support.issue(p.userId, request.params.server_id, { ...request.body, type: request.body.type as SupportCommand });
        return reply.code(202).send(issued);
      },
    );

    app.get(
      "/support/commands/:command_id",
      {
        schema: {
          tags: SUPPORT,
          summary: "A command and its result",
          description: "State, result (log lines, diagnostics report) or error, and the audit entry that issued it. Portal admins only.",
          params: Type.Object({ command_id: Uuid }),
          response: { 200: CommandDetail, ...errors(404) },
        },
      },
      async (request) => support.command(request.params.command_id),
    );

    app.get(
      "/support/audit-log",
      {
        schema: {
          tags: AUDIT,
          summary: "The audit log of every organisation",
          description: "Newest first. Portal admins only.",
          querystring: Type.Object({ ...PageQuery.properties, organization_id: Type.Optional(Uuid) }, { additionalProperties: false }),
          response: { 200: Page(AuditEntryRef), ...errors() },
        },
      },
      async (request) => {
        const { organization_id, ...page } = request.query;
        return audit.list(organization_id ?? null, page);
      },
    );

    app.get(
      "/organizations/:organization_id/audit-log",
      {
        schema: {
          tags: AUDIT,
          summary: "The organisation's audit log",
          description: "What support staff did on the organisation's servers and environments: who, when, what, on which target, why, and the result. Newest first. Owners only.",
          params: Type.Object({ organization_id: Uuid }),
          querystring: PageQuery,
          response: { 200: Page(AuditEntryRef), ...errors(404) },
        },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.audit.read");
        return audit.list(orgId, request.query);
      },
    );

    app.get(
      "/organizations/:organization_id/audit-log/:entry_id",
      {
        schema: {
          tags: AUDIT,
          summary: "One audit entry with the command's output",
          description: "As in the list, plus `output`: the log lines of a logs.tail, the report of a diagnostics. Owners only.",
          params: Type.Object({ organization_id: Uuid, entry_id: Uuid }),
          response: { 200: AuditEntryDetail, ...errors(404) },
        },
      },
      async (request) => {
        const { organization_id, entry_id } = request.params;
        await access.requireOrg(personOf(request), organization_id, "org.audit.read");
        const row = await audit.get(entry_id, organization_id);
        if (!row) throw notFound("Audit entry");
        return auditEntryDetail(row);
      },
    );
  };
}
