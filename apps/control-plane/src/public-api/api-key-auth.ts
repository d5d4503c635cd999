// Authenticates the API key and meters its rate limit. Keys are remembered per replica
// (key-cache.ts, dropped on revocation everywhere) and budgets are leased from shared
// counters in PostgreSQL (rate-leases.ts), so most requests make no round trip for either
// while every replica still counts the same budget exactly.
import type { FastifyReply, FastifyRequest } from "fastify";
import type pg from "pg";
import type { Clock } from "../lib/clock.ts";
import { DomainError, type ErrorCode } from "../lib/errors.ts";
import { hashApiKey, looksLikeApiKey, type KeyAccess } from "../modules/api-keys/api-key-format.ts";
import { requireFullAccess, requireOrgScope } from "../modules/api-keys/key-principal.ts";
import { KEY_LIMITS, RATE_WINDOW_SECONDS, WEBHOOK_WRITE_LIMIT, rateHeaders, tightest, type Meter } from "./rate-limits.ts";
import type { CachedKey, KeyCache } from "../modules/api-keys/key-cache.ts";
import { createLeaseMeter } from "./rate-leases.ts";

const LOOKUP = `
select k.id, k.organization_id, k.project_id, k.access, k.revoked_at is not null as revoked, o.plan
from api_keys k join organizations o on o.id = k.organization_id
where k.key_hash = $1`;

interface Row {
  id: string;
  organization_id: string;
  project_id: string | null;
  access: KeyAccess;
  revoked: boolean;
  plan: string;
}

const unauthorized = (code: ErrorCode, message: string) =>
  new DomainError(code, message, undefined, { "www-authenticate": 'Bearer realm="berth"' });

export function createApiKeyAuth(deps: { pool: pg.Pool; clock: Clock; keys: KeyCache }) {
  const lastUsedWritten = new Map<string, number>();
  const meter = createLeaseMeter(deps.pool);

  async function lookup(hash: string, nowMs: number): Promise<CachedKey | undefined> {
    const cached = deps.keys.get(hash, nowMs);
    if (cached) return cached;
    const { rows } = await deps.pool.query<Row>({ name: "berth_api_key_lookup", text: LOOKUP, values: [hash] });
    const row = rows[0];
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
    deps.pool.query("update api_keys set last_used_at = $2 where id = $1", [keyId, now]).catch(() => {});
  }

  return async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const header = request.headers.authorization;
    if (!header) throw unauthorized("authentication_required", "Send your API key as: Authorization: Bearer <API_KEY>");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized("invalid_authorization_header", "The Authorization header must be: Bearer <API_KEY>");
    const key = match[1];
    if (!looksLikeApiKey(key)) throw unauthorized("invalid_api_key", "The API key is not valid");

    const now = deps.clock.now();
    const windowStart = Math.floor(now.getTime() / 1000 / RATE_WINDOW_SECONDS) * RATE_WINDOW_SECONDS;
    const webhookWrite = request.routeOptions.config.webhookWrite === true;
    const row = await lookup(hashApiKey(key), now.getTime());
    if (!row) throw unauthorized("invalid_api_key", "The API key is not valid");
    if (row.revoked) throw unauthorized("api_key_revoked", "The API key has been revoked");
    if (row.plan === "free") {
      throw new DomainError("plan_upgrade_required", "API access requires the Starter plan or higher");
    }

    const resetAt = windowStart + RATE_WINDOW_SECONDS;
    const meters: Meter[] = [await meter.hit(`key:${row.id}`, windowStart, KEY_LIMITS[row.access], resetAt)];
    if (webhookWrite) meters.push(await meter.hit(`webhook:${row.id}`, windowStart, WEBHOOK_WRITE_LIMIT, resetAt));
    const exceeded = meters.find((m) => m.used > m.limit);
    const shown = exceeded ?? tightest(meters);
    reply.headers(rateHeaders(shown));
    if (exceeded) {
      const retryAfter = Math.max(1, Math.ceil(resetAt - now.getTime() / 1000));
      throw new DomainError("rate_limit_exceeded",
        `Rate limit of ${exceeded.limit} requests per ${RATE_WINDOW_SECONDS} seconds exceeded; retry in ${retryAfter} s`,
        undefined,
        { "retry-after": String(retryAfter) },
      );
    }
    request.principal = {
      keyId: row.id,
      organizationId: row.organizationId,
      projectId: row.projectId,
      access: row.access,
    };
    touch(row.id, now);
    // Permissions are decided before the request is validated: a key that may not make
    // this request learns that, not what was wrong with its body.
    if (request.method !== "GET" && request.method !== "HEAD") requireFullAccess(request);
    if (request.routeOptions.config.orgScoped) requireOrgScope(request);
  };
}
