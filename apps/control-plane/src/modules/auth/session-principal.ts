// Who a platform API request comes from: the person whose session token it carries.
// platform-api/session-auth.ts sets request.person; routes read it with personOf.
import type { FastifyRequest } from "fastify";
import { DomainError } from "../../lib/errors.ts";
import type { SessionPrincipal } from "./sessions.ts";

declare module "fastify" {
  interface FastifyRequest {
    person: SessionPrincipal | null;
  }
  interface FastifyContextConfig {
    /** No session needed (sign-in, registration, signed hooks). */
    anonymous?: boolean;
    /** Without an Authorization header, ?ticket= is let through: the route redeems it (GET /api/v1/events only). */
    streamTicket?: boolean;
  }
}

export const SIGN_IN_REQUIRED = "Sign in and send your session token as: Authorization: Bearer <ACCESS_TOKEN>";

export function personOf(request: FastifyRequest): SessionPrincipal {
  if (!request.person) throw new DomainError("authentication_required", SIGN_IN_REQUIRED);
  return request.person;
}
