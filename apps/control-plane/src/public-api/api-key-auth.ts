// Authenticates the API key and takes its rate-limit budget. Keys are remembered per replica
// (modules/api-keys/key-cache.ts, dropped on revocation everywhere) and budgets are leased
// from shared counters in PostgreSQL (modules/rate-limits), so most requests make no round
// trip for either while every replica still counts the same budget exactly.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Clock } from "../lib/clock.ts";
import { DomainError, type ErrorCode } from "../lib/errors.ts";
import { hashApiKey, looksLikeApiKey } from "../modules/api-keys/api-key-format.ts";
import { requireFullAccess, requireOrgScope } from "../modules/api-keys/key-principal.ts";
import { KEY_LIMITS, WEBHOOK_WRITE_LIMIT } from "../modules/rate-limits/limits.ts";
import type { Budget, RateLimiter } from "../modules/rate-limits/rate-limiter.ts";
import type { CachedKey, KeyCache } from "../modules/api-keys/key-cache.ts";
import type { ApiKeysRepo } from "../modules/api-keys/api-keys.repo.ts";

const unauthorized = (code: ErrorCode, message: string) =>
  new DomainError(code, message, undefined, { "www-authenticate": 'Bearer realm="berth"' });

export function createApiKeyAuth(deps: { repo: Pick<ApiKeysRepo, "authLookup" | "touch">; clock: Clock; keys: KeyCache; limits: RateLimiter }) {
  const lastUsedWritten = new Map<string, number>();

  async function lookup(hash: string, nowMs: number): Promise<CachedKey | undefined> {
    const cached = deps.keys.get(hash, nowMs);
    if (cached) return cached;
    const row = await deps.repo.authLookup(hash);
    if (!row) return undefined;
    const key = { id: row.id, organizationId: row.organization_id, projectId: row.project_id, access: row.access, plan: row.plan, revoked: row.revoked };
    deps.keys.set(hash, key, nowMs);
    return key;
  }

  /** last_used_at is informative: written at most once a minute per key, off the hot path. */
  function touch(keyId: string, now: Date) {
    const prev = lastUsedWritten.get(keyId) ?? 0;
    if (now.getTime() - prev < 60_000) return;
    lastUsedWritten.set(keyId, now.getTime());
    deps.repo.touch(keyId, now).catch(() => {});
  }

  return async function authenticate(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw unauthorized("authentication_required", "Send your API key as: Authorization: Bearer <API_KEY>");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized("invalid_authorization_header", "The Authorization header must be: Bearer <API_KEY>");
    const key = match[1];
    if (!looksLikeApiKey(key)) throw unauthorized("invalid_api_key", "The API key is not valid");

    const now = deps.clock.now();
    const row = await lookup(hashApiKey(key), now.getTime());
    if (!row) throw unauthorized("invalid_api_key", "The API key is not valid");
    if (row.revoked) throw unauthorized("api_key_revoked", "The API key has been revoked");
    if (row.plan === "free") {
      throw new DomainError("plan_upgrade_required", "API access requires the Starter plan or higher");
    }

    const budgets: Budget[] = [{ bucket: `key:${row.id}`, limit: KEY_LIMITS[row.access] }];
    if (request.routeOptions.config.webhookWrite === true) budgets.push({ bucket: `webhook:${row.id}`, limit: WEBHOOK_WRITE_LIMIT });
    await deps.limits.take(...budgets);
    request.principal = {
      keyId: row.id,
      organizationId: row.organizationId,
      projectId: row.projectId,
      access: row.access,
    };
    touch(row.id, now);
    // Permissions are decided before the request is validated: a key that may not make
    // this request learns that, not what was wrong with its body.
    if (request.method !== "GET" && request.method !== "HEAD" && request.routeOptions.config.readOnly !== true) requireFullAccess(request);
    if (request.routeOptions.config.orgScoped) requireOrgScope(request);
  };
}
