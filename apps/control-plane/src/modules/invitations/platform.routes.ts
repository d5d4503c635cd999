// Platform routes of invitations: an organisation's admins invite, list, resend and revoke;
// the invitee looks the invitation up (before signing in) and accepts it. Registering with an
// invitation token is POST /auth/register (auth.routes.ts).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyRequest } from "fastify";
import { publicUrl } from "../../config.ts";
import { DomainError } from "../../lib/errors.ts";
import { errors, StringEnum, Timestamp, Uuid, refTo, LiteralUnion } from "../../lib/http-schemas.ts";
import { installOrigin, InstallOriginError } from "../agent-releases/index.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import type { RateLimiter } from "../rate-limits/rate-limiter.ts";
import { INVITATION_TTL_MS, type Invitations } from "./invitations.service.ts";

const TAG = ["Organizations"];
const ORG_ROLES = ["owner", "admin", "member"] as const;
/** Invitations an organisation may send (and resend) a minute: a mailbox is not a target. */
const INVITE_LIMIT = 20;
/** Token look-ups per client address a minute. */
const LOOKUP_LIMIT = 30;

const Invitation = Type.Object(
  {
    id: Uuid,
    organization_id: Uuid,
    email: Type.String(),
    role: StringEnum(ORG_ROLES),
    status: StringEnum(["pending", "expired"] as const, { description: "expired: the link no longer works; resend or revoke it" }),
    invited_by: Type.Union([Uuid, Type.Null()]),
    created_at: Timestamp,
    sent_at: Timestamp,
    expires_at: Timestamp,
  },
  { $id: "Invitation", title: "Invitation" },
);
const InvitationRef = refTo(Invitation);
const RoleInput = LiteralUnion(ORG_ROLES);
const OrgParams = Type.Object({ organization_id: Uuid });
const InvitationParams = Type.Object({ organization_id: Uuid, invitation_id: Uuid });
const Token = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200, description: "The bin_… token of the invitation link" }) }, { additionalProperties: false });

/** The dashboard's origin for the link in the mail: BERTH_PUBLIC_URL, else the inviter's (plain) Host. */
function linkBase(request: FastifyRequest): string {
  try {
    return installOrigin(request, publicUrl());
  } catch (error) {
    if (error instanceof InstallOriginError) throw new DomainError("invalid_host", error.message);
    throw error;
  }
}

export function invitationsRoutes(deps: {
  invitations: Invitations;
  access: Pick<Access, "requireOrg">;
  limits: RateLimiter;
}): FastifyPluginAsyncTypebox {
  const { invitations, access, limits } = deps;
  /** The caller as an inviter of this organisation (needs org.members.manage). */
  async function inviterIn(request: FastifyRequest, organizationId: string) {
    const person = personOf(request);
    const role = await access.requireOrg(person, organizationId, "org.members.manage");
    return { userId: person.userId, role, name: person.name };
  }

  return async (app) => {
    app.addSchema(Invitation);
    app.get(
      "/organizations/:organization_id/invitations",
      { schema: { tags: TAG, summary: "Open invitations", params: OrgParams, response: { 200: Type.Object({ data: Type.Array(InvitationRef) }), ...errors(404) } } },
      async (request) => {
        await access.requireOrg(personOf(request), request.params.organization_id, "org.members.manage");
        return { data: await invitations.list(request.params.organization_id) };
      },
    );

    app.post(
      "/organizations/:organization_id/invitations",
      {
        schema: {
          tags: TAG,
          summary: "Invite someone",
          description:
            `Mails the address a link to join the organisation with the role, valid ${INVITATION_TTL_MS / 86_400_000} days and once. ` +
            "The invitation is accepted by the account with that address (POST /invitations/accept), or by a new account registered with the " +
            "token (POST /auth/register with invitation_token). Needs organisation admin; inviting an owner needs an owner (403 `owner_required`). " +
            "409 `already_member` when the address is a member, 409 `invitation_exists` when one is open (resend or revoke it); 503 " +
            "`mail_unavailable` when the mail server cannot take the message (nothing is kept). At most " +
            `${INVITE_LIMIT} invitations a minute per organisation.`,
          params: OrgParams,
          body: Type.Object({ email: Type.String({ format: "email", maxLength: 254 }), role: RoleInput }, { additionalProperties: false }),
          response: { 201: InvitationRef, ...errors(404, 409, 503) },
        },
      },
      async (request, reply) => {
        const orgId = request.params.organization_id;
        const inviter = await inviterIn(request, orgId);
        await limits.take({ bucket: `invite:${orgId}`, limit: INVITE_LIMIT, what: "invitations for this organisation" });
        return reply.code(201).send(await invitations.invite(inviter, orgId, request.body, linkBase(request)));
      },
    );

    app.post(
      "/organizations/:organization_id/invitations/:invitation_id/resend",
      {
        schema: {
          tags: TAG,
          summary: "Resend an invitation",
          description: "Mails a new link (the previous one stops working) valid for another week. An expired invitation can be resent.",
          params: InvitationParams,
          response: { 200: InvitationRef, ...errors(404, 503) },
        },
      },
      async (request) => {
        const orgId = request.params.organization_id;
        const inviter = await inviterIn(request, orgId);
        await limits.take({ bucket: `invite:${orgId}`, limit: INVITE_LIMIT, what: "invitations for this organisation" });
        return invitations.resend(inviter, orgId, request.params.invitation_id, linkBase(request));
      },
    );

    app.delete(
      "/organizations/:organization_id/invitations/:invitation_id",
      { schema: { tags: TAG, summary: "Revoke an invitation", description: "Its link stops working at once.", params: InvitationParams, response: { 204: Type.Null(), ...errors(404) } } },
      async (request, reply) => {
        await access.requireOrg(personOf(request), request.params.organization_id, "org.members.manage");
        await invitations.revoke(request.params.organization_id, request.params.invitation_id);
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/invitations/lookup",
      {
        config: { anonymous: true },
        schema: {
          tags: TAG,
          summary: "Look an invitation up",
          description:
            "What the accept page shows before anyone signs in: the organisation, the address and role, and whether an account with that address " +
            "exists (then sign in as it and accept; else register with the token). The token goes in the body, never in a URL. 404 " +
            "`invitation_not_found` for a token that is unknown, expired, revoked or used.",
          security: [],
          body: Token,
          response: {
            200: Type.Object({
              organization: Type.Object({ id: Uuid, name: Type.String() }),
              email: Type.String(),
              role: StringEnum(ORG_ROLES),
              expires_at: Timestamp,
              account_exists: Type.Boolean(),
            }),
            ...errors(404),
          },
        },
      },
      async (request) => {
        await limits.take({ bucket: `invitation-lookup:${request.ip}`, limit: LOOKUP_LIMIT, what: "invitation look-ups" });
        return invitations.lookup(request.body.token);
      },
    );

    app.post(
      "/invitations/accept",
      {
        schema: {
          tags: TAG,
          summary: "Accept an invitation",
          description:
            "The signed-in person joins the organisation with the invitation's role (someone already a member keeps their role). Only the account " +
            "with the address the invitation was sent to may accept it (403 `invitation_email_mismatch`, the invitation stays open); the token " +
            "works once.",
          body: Token,
          response: { 200: Type.Object({ organization_id: Uuid, organization_name: Type.String(), role: StringEnum(ORG_ROLES) }), ...errors(404) },
        },
      },
      async (request) => invitations.accept(personOf(request), request.body.token),
    );
  };
}
