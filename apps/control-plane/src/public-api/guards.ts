// Permission checks of public spec section 5, shared by every public route.
import type { FastifyRequest } from "fastify";
import { ApiError, forbidden } from "../lib/errors.ts";
import type { Scope } from "../lib/scope.ts";
import type { KeyPrincipal } from "./api-key-auth.ts";

export function principalOf(request: FastifyRequest): KeyPrincipal {
  if (!request.principal) throw new ApiError(401, "authentication_required", "Send your API key as: Authorization: Bearer <API_KEY>");
  return request.principal;
}

export function scopeOf(request: FastifyRequest): Scope {
  const p = principalOf(request);
  return { organizationId: p.organizationId, projectId: p.projectId };
}

/** Read-only keys may use read endpoints only. */
export function requireFullAccess(request: FastifyRequest): KeyPrincipal {
  const p = principalOf(request);
  if (p.access !== "full_access") {
    throw forbidden("read_only_key", "This API key is read-only; use a full-access key (svc_live_rw_...) for this request");
  }
  return p;
}

/** Creating and deleting projects needs a key for the whole organisation. */
export function requireOrgScope(request: FastifyRequest): KeyPrincipal {
  const p = principalOf(request);
  if (p.projectId) {
    throw forbidden("project_scoped_key", "This API key is scoped to one project; use an organisation-scoped key for this request");
  }
  return p;
}
