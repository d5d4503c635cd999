// Platform API: organisations the caller belongs to, their members and project members,
// and the API keys of the public API (created here, shown once).
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { and, eq, sql } from "drizzle-orm";
import { memberships, users } from "@berth/db";
import { DomainError, notFound } from "../../lib/errors.ts";
import { errors, Nullable, Page, PageQuery, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { personOf } from "../auth/session-principal.ts";
import type { PlatformDeps } from "../../platform-api/index.ts";
import { ApiKey } from "../api-keys/api-keys.routes.ts";
import { PASSWORD_MIN_LENGTH } from "../auth/passwords.ts";
import { can } from "../auth/permissions.ts";

const OrgParams = Type.Object({ organization_id: Uuid });
const Member = Type.Object({ user_id: Uuid, email: Type.String(), name: Type.String(), role: Type.String(), created_at: Timestamp });
const ApiKeyRef = Type.Ref(ApiKey) as unknown as typeof ApiKey;

export function organizationsRoutes(deps: PlatformDeps): FastifyPluginAsyncTypebox {
  const { db, services } = deps;
  const access = services.access;
  return async (app) => {
    app.get(
      "/organizations",
      {
        schema: {
          tags: ["Organizations"],
          summary: "My organisations",
          response: { 200: Type.Object({ data: Type.Array(Type.Object({ id: Uuid, name: Type.String(), plan: Type.String(), role: Type.String() })) }), ...errors() },
        },
      },
      async (request) => {
        const p = personOf(request);
        const { rows } = await db.execute<{ id: string; name: string; plan: string; role: string }>(
          p.isPortalAdmin
            ? sql`select o.id, o.name, o.plan, coalesce(m.role, 'portal_admin') as role from organizations o
                  left join memberships m on m.organization_id = o.id and m.user_id = ${p.userId} order by o.name`
            : sql`select o.id, o.name, o.plan, m.role from memberships m join organizations o on o.id = m.organization_id
                  where m.user_id = ${p.userId} order by o.name`,
        );
        return { data: rows };
      },
    );

    app.get(
      "/organizations/:organization_id/members",
      { schema: { tags: ["Organizations"], summary: "List members", params: OrgParams, response: { 200: Type.Object({ data: Type.Array(Member) }), ...errors(404) } } },
      async (request) => {
        await access.requireOrg(personOf(request), request.params.organization_id, "org.members.list");
        const rows = await db
          .select({ user_id: users.id, email: users.email, name: users.name, role: memberships.role, created_at: memberships.createdAt })
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          .where(eq(memberships.organizationId, request.params.organization_id))
          .orderBy(users.email);
        return { data: rows.map((r) => ({ ...r, created_at: r.created_at.toISOString() })) };
      },
    );

    app.put(
      "/organizations/:organization_id/members",
      {
        schema: {
          tags: ["Organizations"],
          summary: "Add a member or change their role",
          description:
            "Adds the user with this e-mail address (creating the account when `name` and `password` are given and none exists) " +
            "or changes their role. Organisation admins manage members; only owners make owners.",
          params: OrgParams,
          body: Type.Object(
            {
              email: Type.String({ format: "email" }),
              role: Type.Union([Type.Literal("owner"), Type.Literal("admin"), Type.Literal("member")]),
              name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
              password: Type.Optional(Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: 256 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Member, ...errors(404) },
        },
      },
      async (request) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        const role = await access.requireOrg(p, orgId, "org.members.manage");
        if (request.body.role === "owner" && !can(role, "org.audit.read")) throw new DomainError("permission_denied", "Only organisation owners can make owners.");
        let [user] = await db.select().from(users).where(sql`lower(${users.email}) = lower(${request.body.email})`);
        if (!user) {
          if (!request.body.name || !request.body.password) {
            throw new DomainError("user_not_found", "No account has this e-mail address; give name and password to create one");
          }
          user = await services.sessions.createUser({ email: request.body.email, name: request.body.name, password: request.body.password });
        }
        const m = await services.memberships.addToOrganization(orgId, user.id, request.body.role);
        return { user_id: user.id, email: user.email, name: user.name, role: m.role, created_at: m.createdAt.toISOString() };
      },
    );

    app.put(
      "/projects/:project_id/members/:user_id",
      {
        schema: {
          tags: ["Organizations"],
          summary: "Give a member a role in a project",
          description: "project admin: deploy, cancel, operate; project member: list and view. The user must belong to the organisation.",
          params: Type.Object({ project_id: Uuid, user_id: Uuid }),
          body: Type.Object({ role: Type.Union([Type.Literal("admin"), Type.Literal("member")]) }, { additionalProperties: false }),
          response: { 200: Type.Object({ project_id: Uuid, user_id: Uuid, role: Type.String() }), ...errors(404) },
        },
      },
      async (request) => {
        const { project_id, user_id } = request.params;
        const a = await access.requireProject(personOf(request), project_id, "project.members.manage");
        const [member] = await db.select().from(memberships).where(and(eq(memberships.organizationId, a.organizationId), eq(memberships.userId, user_id)));
        if (!member) throw notFound("Member");
        await services.memberships.addToProject(project_id, user_id, request.body.role);
        return { project_id, user_id, role: request.body.role };
      },
    );

    app.post(
      "/organizations/:organization_id/api-keys",
      {
        schema: {
          tags: ["API keys"],
          summary: "Create an API key",
          description: "The key (svc_live_ro_… or svc_live_rw_…) is in the response once and never again; only its hash is kept.",
          params: OrgParams,
          body: Type.Object(
            {
              name: Type.String({ minLength: 1, maxLength: 100 }),
              access: Type.Union([Type.Literal("read_only"), Type.Literal("full_access")]),
              project_id: Type.Optional(Nullable(Uuid)),
            },
            { additionalProperties: false },
          ),
          response: { 201: Type.Object({ ...ApiKey.properties, key: Type.String() }), ...errors(404) },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        await access.requireOrg(p, orgId, "org.api_keys.manage");
        const projectId = request.body.project_id ?? null;
        if (projectId && (await access.roleInProject(p, projectId))?.organizationId !== orgId) throw notFound("Project");
        const key = await services.apiKeys.create({ organizationId: orgId, projectId, access: request.body.access, name: request.body.name, createdBy: p.userId });
        return reply.code(201).send(key);
      },
    );

    app.get(
      "/organizations/:organization_id/api-keys",
      { schema: { tags: ["API keys"], summary: "List API keys", params: OrgParams, querystring: PageQuery, response: { 200: Page(ApiKeyRef), ...errors(404) } } },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.api_keys.manage");
        return services.apiKeys.list({ organizationId: orgId, projectId: null }, request.query);
      },
    );

    app.delete(
      "/organizations/:organization_id/api-keys/:id",
      {
        schema: {
          tags: ["API keys"],
          summary: "Revoke an API key",
          params: Type.Object({ organization_id: Uuid, id: Uuid }),
          response: { 200: ApiKeyRef, ...errors(404) },
        },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.api_keys.manage");
        return services.apiKeys.revoke({ organizationId: orgId, projectId: null }, request.params.id);
      },
    );
  };
}
