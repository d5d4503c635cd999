// Rules for API keys: created (shown once) by the platform, listed and revoked through
// the public API. A project-scoped key manages only keys of its own project.
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { scopedReads } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import { generateApiKey, type KeyAccess } from "./api-key-format.ts";
import type { ApiKeyRow, ApiKeysRepo } from "./api-keys.repo.ts";

export function apiKeyView(k: ApiKeyRow) {
  return {
    id: k.id,
    name: k.name,
    prefix: k.displayPrefix,
    access: k.access as KeyAccess,
    scope: k.projectId ? ("project" as const) : ("organization" as const),
    project_id: k.projectId,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

/** Active (unrevoked) API keys an organisation may hold: each key has its own rate budget, so minting keys must not multiply it without end. */
export const API_KEY_LIMIT = 50;

export function createApiKeysService(deps: { apiKeys: ApiKeysRepo; cursors: CursorCodec; clock: Clock; onRevoked?: (id: string) => void; limit?: number }) {
  const limit = deps.limit ?? API_KEY_LIMIT;
  return {
    /** Returns the key text exactly once; only its hash is kept. At most `limit` active keys per organisation. */
    async create(input: { organizationId: string; projectId: string | null; access: KeyAccess; name: string; createdBy: string | null }) {
      const { secret, hash, displayPrefix } = generateApiKey(input.access);
      const row = await deps.apiKeys.insertWithinLimit({
        organizationId: input.organizationId,
        projectId: input.projectId,
        access: input.access,
        name: input.name,
        displayPrefix,
        keyHash: hash,
        createdBy: input.createdBy,
        createdAt: deps.clock.now(),
      }, limit);
      if (!row) throw new DomainError("api_key_limit_reached", `An organisation may hold at most ${limit} active API keys; revoke one first`);
      return { ...apiKeyView(row), key: secret };
    },
    ...scopedReads({ codec: deps.cursors, list: "api_keys", label: "API key", repo: deps.apiKeys, view: apiKeyView }),
    /** Revoking twice is not an error: the key stays revoked at its first time. */
    async revoke(scope: Scope, id: string) {
      const row = await deps.apiKeys.revoke(scope, id, deps.clock.now());
      if (!row) throw notFound("API key");
      // This replica forgets it before answering; the others hear it through NOTIFY.
      deps.onRevoked?.(row.id);
      return apiKeyView(row);
    },
    /**
     * Revokes every key a person created in the organisation (when they leave it, or an admin
     * cuts off their access); returns how many were live.
     */
    async revokeCreatedBy(organizationId: string, userId: string): Promise<number> {
      const ids = await deps.apiKeys.revokeCreatedBy(organizationId, userId, deps.clock.now());
      for (const id of ids) deps.onRevoked?.(id);
      return ids.length;
    },
  };
}
export type ApiKeysService = ReturnType<typeof createApiKeysService>;
