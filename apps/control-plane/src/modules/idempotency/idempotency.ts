// Idempotency keys (public spec 4.4). The first request with a key claims a row in
// PostgreSQL; its response is stored and replayed for 24 hours with the original status,
// whichever replica answers. A duplicate while the first is in flight gets 409.
//
// The answer is kept after the work committed, in another transaction, so a replica can die
// (or lose PostgreSQL) between the two. What such a request made must not be made twice by
// its retry: an operation keeps the request's key in its own transaction (Actor.idempotency,
// deployments.idempotency_key), and the retry, which takes over the abandoned or released
// claim, is answered with that operation.
//
// A response that carries a secret shown once (a route's `shownOnce` config: the webhook
// signing secret, an enrolment token) is stored with those fields set to null, so no
// idempotency record holds the secret. Its replay is the same body with those fields null
// and the header `X-Idempotency-Withheld: <the fields, comma-separated>`: the secret was
// in the first response only; a client that lost it rotates or recreates the resource.
import type { FastifyReply, FastifyRequest } from "fastify";
import { isDatabaseUnavailable, retryWhileDatabaseUnavailable } from "../../db/database-unavailable.ts";
import type { Clock } from "../../lib/clock.ts";
import { DomainError } from "../../lib/errors.ts";
import type { IdempotencyRepo } from "./idempotency.repo.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** An in-flight claim older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 60 * 1000;
const REPLAYED_HEADERS = ["content-type", "location"];
/** The header of a replay whose shown-once fields were withheld (null in the body). */
export const WITHHELD_HEADER = "x-idempotency-withheld";

/** The key a request holds: whose key it is (e.g. api_key:<id>) and the key itself. */
export interface IdempotencyClaim {
  scope: string;
  key: string;
  /** When this request claimed it (the row's locked_at). */
  claimedAt: Date;
}

declare module "fastify" {
  interface FastifyRequest {
    idempotencyClaim: IdempotencyClaim | null;
  }
  interface FastifyContextConfig {
    /** Fields of the response (dotted paths, e.g. "enrollment.token") shown once: never stored for a replay. */
    shownOnce?: string[];
  }
}

/**
 * The body as it may be kept for a replay: each shown-once field that is present set to
 * null. Returns the fields withheld; a body that is not a JSON object is kept as it is.
 */
export function withoutShownOnce(body: string, fields: readonly string[]): { body: string; withheld: string[] } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return { body, withheld: [] };
  }
  const withheld: string[] = [];
  for (const field of fields) {
    const path = field.split(".");
    let at: unknown = parsed;
    for (const part of path.slice(0, -1)) at = at !== null && typeof at === "object" ? (at as Record<string, unknown>)[part] : undefined;
    const last = path[path.length - 1]!;
    if (at === null || typeof at !== "object" || !(last in at)) continue;
    (at as Record<string, unknown>)[last] = null;
    withheld.push(field);
  }
  return withheld.length === 0 ? { body, withheld } : { body: JSON.stringify(parsed), withheld };
}

export function readIdempotencyKey(request: FastifyRequest): string | undefined {
  const pick = (name: string) => {
    const v = request.headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const key = pick("x-idempotency-key") ?? pick("idempotency-key");
  if (key === undefined) return undefined;
  if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
    throw new DomainError("invalid_idempotency_key", "The idempotency key must be 1 to 255 visible ASCII characters (a UUID v4 is recommended)");
  }
  return key;
}

export function createIdempotency(deps: { repo: IdempotencyRepo; clock: Clock; scopeOf: (r: FastifyRequest) => string }) {
  async function preHandler(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== "POST") return; // GET, PUT, PATCH and DELETE ignore the header (rule 6).
    const key = readIdempotencyKey(request);
    if (key === undefined) return;
    const scope = deps.scopeOf(request);
    const now = deps.clock.now();
    const claimed = await deps.repo.claim({
      scope,
      key,
      method: request.method,
      path: request.url,
      now,
      expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
      abandonedBefore: new Date(now.getTime() - ABANDONED_AFTER_MS),
    });
    if (claimed) {
      request.idempotencyClaim = { scope, key, claimedAt: now };
      return;
    }
    const stored = await deps.repo.stored(scope, key);
    if (!stored || stored.state !== "completed" || stored.status_code === null) {
      throw new DomainError("idempotency_key_in_use", "A request with this idempotency key is still being processed; retry shortly");
    }
    reply.code(stored.status_code).headers(stored.response_headers ?? {}).header("x-idempotency-replayed", "true");
    return reply.send(stored.response_body ?? "");
  }

  async function onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const claim = request.idempotencyClaim;
    if (!claim) return payload;
    request.idempotencyClaim = null;
    if (reply.statusCode >= 500) {
      // The operation may not have happened: let the client retry with the same key, given
      // up before the answer goes out. The answer goes out whatever happens here: with
      // PostgreSQL away (a 503 database_unavailable) the key is given up once it is back;
      // until then, or if that fails for good, a retry is told idempotency_key_in_use, and
      // takes the claim over once it is abandoned.
      const release = () => deps.repo.release(claim.scope, claim.key, claim.claimedAt);
      const failed = (err: unknown) => request.log.warn({ err }, "could not give up the idempotency key");
      await release().catch((err: unknown) => {
        if (!isDatabaseUnavailable(err)) return failed(err);
        void retryWhileDatabaseUnavailable(release, { forMs: ABANDONED_AFTER_MS }).catch(failed);
      });
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const h of REPLAYED_HEADERS) {
      const v = reply.getHeader(h);
      if (v !== undefined) headers[h] = String(v);
    }
    let body = typeof payload === "string" ? payload : "";
    const shownOnce = request.routeOptions.config.shownOnce;
    if (shownOnce && shownOnce.length > 0) {
      const kept = withoutShownOnce(body, shownOnce);
      body = kept.body;
      if (kept.withheld.length > 0) headers[WITHHELD_HEADER] = kept.withheld.join(",");
    }
    // The work is done: its answer is sent even if it cannot be kept. A retry then takes the
    // abandoned claim over and is answered with the operation the work made (see above).
    await deps.repo.complete(claim.scope, claim.key, { statusCode: reply.statusCode, body, headers }).catch((err: unknown) => {
      request.log.warn({ err }, "could not keep the answer for idempotent replays");
    });
    return payload;
  }

  return { preHandler, onSend };
}
