// Platform API: organisations the caller belongs to, their members and project members:
// adding, changing roles, removing, and signing a member out everywhere.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import type { Memberships } from "./memberships.service.ts";

const OrgParams = Type.Object({ organization_id: Uuid });
const MemberParams = Type.Object({ organization_id: Uuid, user_id: Uuid });
const OWNER_RULES =
  "Organisation admins manage admins and members; only owners (and portal admins) make owners or change or remove an owner " +
  "(403 `owner_required`). The last owner can be neither demoted nor removed (409 `last_owner`): make another owner first.";
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
          summary: "Change a member's role",
          description:
            "Changes the role of the member with this e-mail address. Someone who is not a member is a 404 `user_not_found`: people join " +
            "by accepting an invitation (POST /organizations/{organization_id}/invitations), which only the owner of the address can do. " +
            OWNER_RULES +
            " A changed role ends the person's open event streams of the organisation (they reconnect with their new role).",
          params: OrgParams,
          body: Type.Object(
            {
              email: Type.String({ format: "email" }),
              role: Type.Union([Type.Literal("owner"), Type.Literal("admin"), Type.Literal("member")]),
            },
            { additionalProperties: false },
          ),
          response: { 200: Member, ...errors(404, 409) },
        },
      },
      async (request) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        const role = await access.requireOrg(p, orgId, "org.members.manage");
        return memberships.putMember({ userId: p.userId, role }, orgId, request.body);
      },
    );

    app.delete(
      "/organizations/:organization_id/members/:user_id",
      {
        schema: {
          tags: ["Organizations"],
          summary: "Remove a member",
          description:
            "Removes the person from the organisation at once: their roles in its projects go too, the API keys they created in it are " +
            "revoked (a key was shown to them once and may have been kept), and their open event streams of it (`GET /events`) are " +
            "closed by the server on every replica within moments; every later request of theirs for the organisation's resources is a 404. " +
            "Their account and sessions stay (they may belong to other organisations). Any member may remove themself (leave). " +
            OWNER_RULES +
            " Someone who is not a member of this organisation is a 404.",
          params: MemberParams,
          response: { 204: Type.Null(), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const p = personOf(request);
        const { organization_id, user_id } = request.params;
        const role = await access.requireOrg(p, organization_id, "org.view");
        await memberships.removeMember({ userId: p.userId, role }, organization_id, user_id);
        return reply.code(204).send(null);
      },
    );

    app.delete(
      "/organizations/:organization_id/members/:user_id/sessions",
      {
        schema: {
          tags: ["Organizations"],
          summary: "Sign a member out everywhere",
          description:
            "Revokes every session of the member (sessions belong to the person, so this signs them out of every organisation) and every " +
            "API key they created in this organisation, for a lost laptop or a leaked token. Their tokens get 401 `invalid_session` at once " +
            "and their open event streams are closed by the server on every replica. They stay a member and can sign in again with their " +
            "password: to shut them out, remove them. Needs organisation admin; an owner's sessions only an owner may revoke (403 " +
            "`owner_required`), a portal admin's only a portal admin. Someone who is not a member of this organisation is a 404.",
          params: MemberParams,
          response: {
            200: Type.Object({
              user_id: Uuid,
              sessions_revoked: Type.Integer({ description: "Live sessions revoked" }),
              api_keys_revoked: Type.Integer({ description: "Live API keys of this organisation they had created, now revoked" }),
            }),
            ...errors(404),
          },
        },
      },
      async (request) => {
        const p = personOf(request);
        const { organization_id, user_id } = request.params;
        const role = await access.requireOrg(p, organization_id, "org.members.manage");
        return memberships.revokeMemberAccess({ userId: p.userId, role }, organization_id, user_id);
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

    app.delete(
      "/projects/:project_id/members/:user_id",
      {
        schema: {
          tags: ["Organizations"],
          summary: "Remove a member's role in a project",
          description:
            "The person keeps their organisation role (an organisation owner or admin still sees every project). Their open event streams " +
            "of the organisation are closed, so they reconnect seeing only what they still may. Needs project admin; 404 when they hold no role in the project.",
          params: Type.Object({ project_id: Uuid, user_id: Uuid }),
          response: { 204: Type.Null(), ...errors(404) },
        },
      },
      async (request, reply) => {
        const { project_id, user_id } = request.params;
        const a = await access.requireProject(personOf(request), project_id, "project.members.manage");
        await memberships.removeProjectMember(a.organizationId, project_id, user_id);
        return reply.code(204).send(null);
      },
    );
  };
}
