// Authenticates the API key and takes its rate-limit budget. Keys are remembered per replica
// (modules/api-keys/key-cache.ts, dropped on revocation everywhere) and budgets are leased
// from shared counters in PostgreSQL (modules/rate-limits), so most requests make no round
// trip for either while every replica still counts the same budget exactly.
import type { FastifyContextConfig, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import type { Clock } from "../lib/clock.ts";
import { DomainError, type ErrorCode } from "../lib/errors.ts";
import { hashApiKey, looksLikeApiKey } from "../modules/api-keys/api-key-format.ts";
import { requireFullAccess, requireOrgScope } from "../modules/api-keys/key-principal.ts";
import { KEY_LIMITS, WEBHOOK_WRITE_LIMIT } from "../modules/rate-limits/limits.ts";
import type { RateLimiter } from "../modules/rate-limits/rate-limiter.ts";
import type { CachedKey, KeyCache } from "../modules/api-keys/key-cache.ts";
import type { ApiKeysRepo } from "../modules/api-keys/api-keys.repo.ts";
import type { KeyTouches } from "../modules/api-keys/key-touches.ts";

const unauthorized = (code: ErrorCode, message: string) =>
  new DomainError(code, message, undefined, { "www-authenticate": 'Bearer realm="berth"' });

export function createApiKeyAuth(deps: { repo: Pick<ApiKeysRepo, "authLookup">; touches: KeyTouches; clock: Clock; keys: KeyCache; limits: RateLimiter }) {
  /** Lookups in flight by hash: requests for the same key wait for one. */
  const lookups = new Map<string, Promise<CachedKey | undefined>>();

  function lookup(hash: string, nowMs: number): Promise<CachedKey | undefined> {
    let pending = lookups.get(hash);
    if (pending) return pending;
    const readAt = deps.keys.drops();
    pending = deps.repo.authLookup(hash).then((row) => {
      if (!row) {
        deps.keys.dropHash(hash);
        return undefined;
      }
      const budgets = [{ bucket: `key:${row.id}`, limit: KEY_LIMITS[row.access] }];
      const key = { id: row.id, organizationId: row.organization_id, projectId: row.project_id, access: row.access, plan: row.plan, revoked: row.revoked, budgets };
      deps.keys.set(hash, key, nowMs, readAt);
      return key;
    });
    lookups.set(hash, pending);
    const forget = () => lookups.delete(hash);
    pending.then(forget, forget);
    return pending;
  }

  /** A stale entry's refresh, off the request's path: a failure leaves the entry as it was. */
  function refresh(hash: string, nowMs: number): void {
    if (!lookups.has(hash)) lookup(hash, nowMs).catch(() => {});
  }

  /** The request authenticated and metered: undefined when decided at once (a cached key, a budget leased here), else its promise. */
  function authenticateNow(request: FastifyRequest, config: FastifyContextConfig): Promise<void> | undefined {
    const header = request.headers.authorization;
    if (!header) throw unauthorized("authentication_required", "Send your API key as: Authorization: Bearer <API_KEY>");
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized("invalid_authorization_header", "The Authorization header must be: Bearer <API_KEY>");
    const key = match[1];
    if (!looksLikeApiKey(key)) throw unauthorized("invalid_api_key", "The API key is not valid");

    const now = deps.clock.now();
    const hash = hashApiKey(key);
    const cached = deps.keys.get(hash, now.getTime());
    if (cached) {
      if (cached.stale) refresh(hash, now.getTime());
      return admit(request, config, cached.key, now);
    }
    return lookup(hash, now.getTime()).then((row) => admit(request, config, row, now));
  }

  function admit(request: FastifyRequest, config: FastifyContextConfig, row: CachedKey | undefined, now: Date): Promise<void> | undefined {
    if (!row) throw unauthorized("invalid_api_key", "The API key is not valid");
    if (row.revoked) throw unauthorized("api_key_revoked", "The API key has been revoked");
    if (row.plan === "free") {
      throw new DomainError("plan_upgrade_required", "API access requires the Starter plan or higher");
    }

    const budgets = config.webhookWrite === true ? [...row.budgets, { bucket: `webhook:${row.id}`, limit: WEBHOOK_WRITE_LIMIT }] : row.budgets;
    const metering = deps.limits.takeNow(budgets);
    if (metering) return metering.then(() => admitted(request, config, row, now));
    admitted(request, config, row, now);
    return undefined;
  }

  function admitted(request: FastifyRequest, config: FastifyContextConfig, row: CachedKey, now: Date): void {
    request.principal = {
      keyId: row.id,
      organizationId: row.organizationId,
      projectId: row.projectId,
      access: row.access,
    };
    deps.touches.touch(row.id, now);
    // Permissions are decided before the request is validated: a key that may not make
    // this request learns that, not what was wrong with its body.
    if (request.method !== "GET" && request.method !== "HEAD" && config.readOnly !== true) requireFullAccess(request);
    if (config.orgScoped) requireOrgScope(request);
  }

  // A route's hook, given the route's config when it is registered (reading it per request
  // through request.routeOptions builds an object each time). A callback hook: a request whose
  // key is cached and whose budget is leased here (most of them) is decided without a promise;
  // the others wait for the database.
  return function authenticateFor(config: FastifyContextConfig) {
    return function authenticate(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
      let pending: Promise<void> | undefined;
      try {
        pending = authenticateNow(request, config);
      } catch (err) {
        return done(err as Error);
      }
      if (pending === undefined) return done();
      pending.then(() => done(), (err: unknown) => done(err as Error));
    };
  };
}
