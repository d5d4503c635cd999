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

/** Query parameters that would carry a session token: refused on every route, URLs end up in logs. */
const QUERY_TOKENS = ["access_token", "token"];

export function createSessionAuth(sessions: Sessions) {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply) {
    const query = (request.query ?? {}) as Record<string, unknown>;
    if (QUERY_TOKENS.some((k) => query[k] !== undefined)) {
      throw new DomainError("query_token_refused", "Tokens in the URL are refused: send Authorization: Bearer <ACCESS_TOKEN> (EventSource clients: a ticket from POST /api/v1/events/tickets)");
    }
    if (request.routeOptions.config?.anonymous) return;
    const token = bearerToken(request);
    // EventSource clients cannot set headers: the events route takes a single-use ticket instead.
    if (!token && request.routeOptions.config?.streamTicket && typeof query.ticket === "string") return;
    if (!token) throw new DomainError("authentication_required", SIGN_IN_REQUIRED);
    const person = await sessions.authenticate(token);
    if (!person) throw new DomainError("invalid_session", "This session token is unknown, expired or signed out; sign in again");
    request.person = person;
  };
}
