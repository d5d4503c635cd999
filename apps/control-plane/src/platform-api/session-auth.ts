// Session-token authentication for the platform API: `Authorization: Bearer bst_...`.
// Routes marked `config: { anonymous: true }` (sign-in, the HMAC-signed git hook) skip it.
import type { FastifyReply, FastifyRequest } from "fastify";
import { DomainError } from "../lib/errors.ts";
import type { Sessions } from "../modules/auth/sessions.ts";
import { SIGN_IN_REQUIRED } from "../modules/auth/session-principal.ts";

export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new DomainError("invalid_authorization_header", "Use the header: Authorization: Bearer <ACCESS_TOKEN>");
  return m[1]!;
}

export function createSessionAuth(sessions: Sessions) {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
    if (request.routeOptions.config?.anonymous) return;
    // SSE clients (EventSource) cannot set headers: they may pass the token as access_token.
    const fromQuery = (request.query as { access_token?: unknown } | undefined)?.access_token;
    const token = bearerToken(request) ?? (typeof fromQuery === "string" ? fromQuery : null);
    if (!token) throw new DomainError("authentication_required", SIGN_IN_REQUIRED);
    const person = await sessions.authenticate(token);
    if (!person) throw new DomainError("invalid_session", "This session token is unknown, expired or signed out; sign in again");
    request.person = person;
  };
}
