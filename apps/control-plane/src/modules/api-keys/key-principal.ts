// Who an API key request comes from, and the permission checks of public spec section 5,
// shared by every public route. public-api/api-key-auth.ts sets request.principal.
import type { FastifyRequest } from "fastify";
import { DomainError } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { KeyAccess } from "./api-key-format.ts";
import type { Actor } from "../deployments/operations/operation-start.ts";

export interface KeyPrincipal {
  keyId: string;
  organizationId: string;
  projectId: string | null;
  access: KeyAccess;
}

declare module "fastify" {
  interface FastifyRequest {
    principal: KeyPrincipal | null;
  }
  interface FastifyContextConfig {
    /** Counted against the extra webhook-write limit. */
    webhookWrite?: boolean;
    /** Refused to project-scoped keys (creating and deleting projects, adding servers). */
    orgScoped?: boolean;
    /** A POST that only reads (a stream ticket): read-only keys may use it. */
    readOnly?: boolean;
  }
}

export function principalOf(request: FastifyRequest): KeyPrincipal {
  if (!request.principal) throw new DomainError("authentication_required", "Send your API key as: Authorization: Bearer <API_KEY>");
  return request.principal;
}

/** The key as the actor of what it asks for, with the request's idempotency key if it holds one. */
export function keyActorOf(request: FastifyRequest): Actor {
  return { userId: null, apiKeyId: principalOf(request).keyId, idempotency: request.idempotencyClaim };
}

export function scopeOf(request: FastifyRequest): Scope {
  const p = principalOf(request);
  return { organizationId: p.organizationId, projectId: p.projectId };
}

/** Read-only keys may use read endpoints only. */
export function requireFullAccess(request: FastifyRequest): KeyPrincipal {
  const p = principalOf(request);
  if (p.access !== "full_access") {
    throw new DomainError("read_only_key", "This API key is read-only; use a full-access key (svc_live_rw_...) for this request");
  }
  return p;
}

/** Creating and deleting projects needs a key for the whole organisation. */
export function requireOrgScope(request: FastifyRequest): KeyPrincipal {
  const p = principalOf(request);
  if (p.projectId) {
    throw new DomainError("project_scoped_key", "This API key is scoped to one project; use an organisation-scoped key for this request");
  }
  return p;
}
