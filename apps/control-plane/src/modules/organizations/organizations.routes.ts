// Platform API: organisations the caller belongs to, their members and project members.
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { PASSWORD_MIN_LENGTH } from "../auth/passwords.ts";
import type { Memberships } from "./memberships.service.ts";

const OrgParams = Type.Object({ organization_id: Uuid });
const Member = Type.Object({ user_id: Uuid, email: Type.String(), name: Type.String(), role: Type.String(), created_at: Timestamp });

export function organizationsRoutes(deps: { memberships: Memberships; access: Pick<Access, "requireOrg" | "requireProject"> }): FastifyPluginAsyncTypebox {
  const { memberships, access } = deps;
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
        const rows = await memberships.organizationsOf(personOf(request));
        return { data: rows };
      },
    );

    app.get(
      "/organizations/:organization_id/members",
      { schema: { tags: ["Organizations"], summary: "List members", params: OrgParams, response: { 200: Type.Object({ data: Type.Array(Member) }), ...errors(404) } } },
      async (request) => {
        await access.requireOrg(personOf(request), request.params.organization_id, "org.members.list");
        const rows = await memberships.members(request.params.organization_id);
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
        return memberships.putMember(role, orgId, request.body);
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
        return memberships.putProjectMember(a.organizationId, project_id, user_id, request.body.role);
      },
    );
  };
}
