// Platform API: registration, sign-in and sign-out, the caller's sessions and who they are.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, StringEnum, Timestamp, Uuid, refTo } from "../../lib/http-schemas.ts";
import type { RegistrationMode } from "../../config.ts";
import { DomainError } from "../../lib/errors.ts";
import type { Invitations } from "../invitations/invitations.service.ts";
import type { RateLimiter } from "../rate-limits/rate-limiter.ts";
import { personOf } from "./session-principal.ts";
import { PASSWORD_MIN_LENGTH } from "./passwords.ts";
import { permissionsOf, ROLES } from "./permissions.ts";
import type { Access } from "./access.ts";
import { sessionView, userView, type Sessions } from "./sessions.ts";

const TAG = ["Sessions"];
/** Sign-in attempts per e-mail address and per client address, per minute. */
const LOGIN_LIMIT = 10;

export const User = Type.Object(
  { id: Uuid, email: Type.String(), name: Type.String(), is_portal_admin: Type.Boolean(), created_at: Timestamp },
  { $id: "User", title: "User" },
);
const UserRef = refTo(User);
const Session = Type.Object({
  id: Uuid,
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  expires_at: Timestamp,
  user_agent: Nullable(Type.String()),
  ip: Nullable(Type.String()),
  current: Type.Boolean({ description: "The session this request was made with" }),
});
const SignedIn = Type.Object({
  token: Type.String({ description: "Session token (bst_…), shown once: send it as Authorization: Bearer <token>" }),
  expires_at: Timestamp,
  user: UserRef,
});
const Email = Type.String({ format: "email", maxLength: 254 });
const Password = Type.String({ minLength: PASSWORD_MIN_LENGTH, maxLength: 256, description: `At least ${PASSWORD_MIN_LENGTH} characters` });
const RoleName = StringEnum(ROLES, { description: "portal_admin > org_owner > org_admin > project_admin > project_member" });

/** Who may register, and how (BERTH_REGISTRATION; config.ts): refused with registration_closed, or a missing field. */
function checkRegistration(mode: RegistrationMode, body: { organization_name?: string | undefined; invitation_token?: string | undefined }): void {
  if (body.invitation_token !== undefined) {
    if (mode === "closed") throw new DomainError("registration_closed", "New accounts are not made here: sign in with an existing account to accept the invitation");
    if (body.organization_name !== undefined) throw new DomainError("validation_error", "Give organization_name or invitation_token, not both");
    return;
  }
  if (mode !== "open") throw new DomainError("registration_closed", "Registration is by invitation only: ask an administrator of your organisation to invite you");
  if (body.organization_name === undefined) {
    throw new DomainError("validation_error", "Name your organisation (organization_name), or register with an invitation_token", [{ path: "body/organization_name", message: "is required" }]);
  }
}

export function authRoutes(deps: {
  sessions: Sessions;
  invitations: Pick<Invitations, "register">;
  registration: RegistrationMode;
  access: Pick<Access, "organizations" | "projects">;
  limits: RateLimiter;
}): FastifyPluginAsyncTypebox {
  const meta = (r: { headers: Record<string, unknown>; ip: string }) => ({ userAgent: String(r.headers["user-agent"] ?? "") || undefined, ip: r.ip });
  return async (app) => {
    app.post(
      "/auth/register",
      {
        config: { anonymous: true },
        schema: {
          tags: TAG,
          summary: "Create an account",
          description:
            "Creates a user and signs them in. With `organization_name` (and no invitation), the user owns a new organisation; this needs " +
            "open registration (BERTH_REGISTRATION=open), else 403 `registration_closed`. With `invitation_token` (the token of an invitation " +
            "link), the account is made for the address the invitation was sent to and joins the inviting organisation with its role " +
            "(403 `invitation_email_mismatch` for another address; 404 `invitation_not_found` for a spent or expired token); this needs " +
            "registration open or by invitation (BERTH_REGISTRATION=invite). 409 `email_taken` when an account has the address: sign in and " +
            "accept the invitation (POST /invitations/accept) instead.",
          security: [],
          body: Type.Object(
            {
              email: Email,
              name: Type.String({ minLength: 1, maxLength: 200 }),
              password: Password,
              organization_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The new organisation's name (without an invitation)" })),
              invitation_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The bin_… token of an invitation link" })),
            },
            { additionalProperties: false },
          ),
          response: { 201: Type.Object({ ...SignedIn.properties, organization: Type.Object({ id: Uuid, name: Type.String() }) }), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const b = request.body;
        checkRegistration(deps.registration, b);
        await deps.limits.take({ bucket: `register:${request.ip}`, limit: LOGIN_LIMIT, what: "registrations" });
        const account = { email: b.email, name: b.name, password: b.password };
        const out = b.invitation_token
          ? await deps.invitations.register(b.invitation_token, account, meta(request))
          : await deps.sessions.register({ ...account, organizationName: b.organization_name! }, meta(request));
        return reply.code(201).send({
          token: out.token,
          expires_at: out.session.expiresAt.toISOString(),
          user: userView(out.user),
          organization: { id: out.organization.id, name: out.organization.name },
        });
      },
    );

    app.post(
      "/auth/login",
      {
        config: { anonymous: true },
        schema: {
          tags: TAG,
          summary: "Sign in",
          description: "Exchanges an e-mail address and password for a session token (valid 7 days). Wrong credentials: 401 invalid_credentials.",
          security: [],
          body: Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
          response: { 200: SignedIn, ...errors() },
        },
      },
      async (request) => {
        await deps.limits.take({ bucket: `login:${request.body.email.toLowerCase()}`, limit: LOGIN_LIMIT, what: "sign-in attempts for this account" });
        await deps.limits.take({ bucket: `login-ip:${request.ip}`, limit: LOGIN_LIMIT * 3, what: "sign-in attempts from this address" });
        const out = await deps.sessions.login(request.body.email, request.body.password, meta(request));
        return { token: out.token, expires_at: out.session.expiresAt.toISOString(), user: userView(out.user) };
      },
    );

    app.post(
      "/auth/logout",
      { schema: { tags: TAG, summary: "Sign out", description: "Ends the session this request was made with.", response: { 204: Type.Null(), ...errors() } } },
      async (request, reply) => {
        const p = personOf(request);
        await deps.sessions.revoke(p.userId, p.sessionId);
        return reply.code(204).send(null);
      },
    );

    app.get(
      "/auth/sessions",
      { schema: { tags: TAG, summary: "List my sessions", response: { 200: Type.Object({ data: Type.Array(Session) }), ...errors() } } },
      async (request) => {
        const p = personOf(request);
        return { data: (await deps.sessions.list(p.userId)).map((s) => sessionView(s, p.sessionId)) };
      },
    );

    app.delete(
      "/auth/sessions/:id",
      {
        schema: {
          tags: TAG,
          summary: "Revoke one of my sessions",
          description: "Signs that session out at once (e.g. a lost laptop). Another person's session is a 404.",
          params: Type.Object({ id: Uuid }),
          response: { 204: Type.Null(), ...errors(404) },
        },
      },
      async (request, reply) => {
        await deps.sessions.revoke(personOf(request).userId, request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.get(
      "/me",
      {
        schema: {
          tags: TAG,
          summary: "Who am I",
          description: "The signed-in user, their organisations and projects, with their role and permission codes in each.",
          response: {
            200: Type.Object({
              user: UserRef,
              organizations: Type.Array(Type.Object({ id: Uuid, name: Type.String(), plan: Type.String(), role: RoleName, permissions: Type.Array(Type.String()) })),
              projects: Type.Array(Type.Object({ id: Uuid, organization_id: Uuid, name: Type.String(), role: RoleName, permissions: Type.Array(Type.String()) })),
            }),
            ...errors(),
          },
        },
      },
      async (request) => {
        const p = personOf(request);
        const [user, orgs, projects] = await Promise.all([deps.sessions.me(p.userId), deps.access.organizations(p), deps.access.projects(p, null)]);
        return {
          user: userView(user),
          organizations: orgs.map((o) => ({ ...o, permissions: permissionsOf(o.role) })),
          projects: projects.map((pr) => ({ id: pr.id, organization_id: pr.organizationId, name: pr.name, role: pr.role, permissions: permissionsOf(pr.role) })),
        };
      },
    );
  };
}
