// Authenticates the API key and meters its rate limit in ONE statement: the key lookup
// and the counter upserts are a single round trip on every request. Counters live in
// PostgreSQL so every replica counts the same.
import type { FastifyReply, FastifyRequest } from "fastify";
import type pg from "pg";
import type { Clock } from "../lib/clock.ts";
import { ApiError } from "../lib/errors.ts";
import { hashApiKey, looksLikeApiKey, type KeyAccess } from "../modules/api-keys/api-key-format.ts";
import { requireFullAccess, requireOrgScope } from "./guards.ts";
import { KEY_LIMITS, RATE_WINDOW_SECONDS, WEBHOOK_WRITE_LIMIT, rateHeaders, tightest, type Meter } from "./rate-limits.ts";

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
  }
}

const AUTH_AND_METER = `
with k as (
  select k.id, k.organization_id, k.project_id, k.access, k.revoked_at, o.plan
  from api_keys k join organizations o on o.id = k.organization_id
  where k.key_hash = $1
), hit as (
  insert into rate_limit_counters as c (bucket, window_start, count)
  select 'key:' || k.id, $2, 1 from k where k.revoked_at is null and k.plan <> 'free'
  on conflict (bucket, window_start) do update set count = c.count + 1
  returning c.count
), webhook_hit as (
  insert into rate_limit_counters as c (bucket, window_start, count)
  select 'webhook:' || k.id, $2, 1 from k where $3::boolean and k.revoked_at is null and k.plan <> 'free'
  on conflict (bucket, window_start) do update set count = c.count + 1
  returning c.count
)
select k.id, k.organization_id, k.project_id, k.access, k.revoked_at, k.plan,
       (select count from hit) as used, (select count from webhook_hit) as webhook_used
from k`;

interface Row {
  id: string;
  organization_id: string;
  project_id: string | null;
  access: KeyAccess;
  revoked_at: Date | null;
  plan: string;
  used: number | null;
  webhook_used: number | null;
}

const unauthorized = (code: string, message: string) =>
  new ApiError(401, code, message, undefined, { "www-authenticate": 'Bearer realm="berth"' });

export function createApiKeyAuth(deps: { pool: pg.Pool; clock: Clock }) {
  const lastUsedWritten = new Map<string, number>();

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
    const { rows } = await deps.pool.query<Row>({
      name: "berth_auth_and_meter",
      text: AUTH_AND_METER,
      values: [hashApiKey(key), windowStart, webhookWrite],
    });
    const row = rows[0];
    if (!row) throw unauthorized("invalid_api_key", "The API key is not valid");
    if (row.revoked_at) throw unauthorized("api_key_revoked", "The API key has been revoked");
    if (row.plan === "free") {
      throw new ApiError(403, "plan_upgrade_required", "API access requires the Starter plan or higher");
    }

    const resetAt = windowStart + RATE_WINDOW_SECONDS;
    const meters: Meter[] = [{ limit: KEY_LIMITS[row.access], used: row.used ?? 0, resetAt }];
    if (webhookWrite) meters.push({ limit: WEBHOOK_WRITE_LIMIT, used: row.webhook_used ?? 0, resetAt });
    const exceeded = meters.find((m) => m.used > m.limit);
    const shown = exceeded ?? tightest(meters);
    reply.headers(rateHeaders(shown));
    if (exceeded) {
      const retryAfter = Math.max(1, Math.ceil(resetAt - now.getTime() / 1000));
      throw new ApiError(
        429,
        "rate_limit_exceeded",
        `Rate limit of ${exceeded.limit} requests per ${RATE_WINDOW_SECONDS} seconds exceeded; retry in ${retryAfter} s`,
        undefined,
        { "retry-after": String(retryAfter) },
      );
    }
    request.principal = {
      keyId: row.id,
      organizationId: row.organization_id,
      projectId: row.project_id,
      access: row.access,
    };
    touch(row.id, now);
    // Permissions are decided before the request is validated: a key that may not make
    // this request learns that, not what was wrong with its body.
    if (request.method !== "GET" && request.method !== "HEAD") requireFullAccess(request);
    if (request.routeOptions.config.orgScoped) requireOrgScope(request);
  };
}
