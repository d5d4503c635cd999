// Idempotency keys (public spec 4.4). The first request with a key claims a row in
// PostgreSQL; its response is stored and replayed for 24 hours with the original status,
// whichever replica answers. A duplicate while the first is in flight gets 409.
import type { FastifyReply, FastifyRequest } from "fastify";
import type pg from "pg";
import type { Clock } from "../lib/clock.ts";
import { DomainError } from "../lib/errors.ts";

export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** An in-flight claim older than this belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 60 * 1000;
const REPLAYED_HEADERS = ["content-type", "location"];

declare module "fastify" {
  interface FastifyRequest {
    idempotencyClaim: { scope: string; key: string } | null;
  }
}

const CLAIM = `
insert into idempotency_records as r (scope, key, state, method, path, created_at, locked_at, expires_at)
values ($1, $2, 'in_flight', $3, $4, $5, $5, $6)
on conflict (scope, key) do update
  set state = 'in_flight', method = excluded.method, path = excluded.path, status_code = null,
      response_body = null, response_headers = null, created_at = excluded.created_at,
      locked_at = excluded.locked_at, expires_at = excluded.expires_at
  where r.expires_at <= $5 or (r.state = 'in_flight' and r.locked_at <= $7)
returning 1`;

interface Stored {
  state: string;
  status_code: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
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

export function createIdempotency(deps: { pool: pg.Pool; clock: Clock; scopeOf: (r: FastifyRequest) => string }) {
  async function preHandler(request: FastifyRequest, reply: FastifyReply) {
    if (request.method !== "POST") return; // GET, PUT, PATCH and DELETE ignore the header (rule 6).
    const key = readIdempotencyKey(request);
    if (key === undefined) return;
    const scope = deps.scopeOf(request);
    const now = deps.clock.now();
    const claimed = await deps.pool.query(CLAIM, [
      scope,
      key,
      request.method,
      request.url,
      now,
      new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
      new Date(now.getTime() - ABANDONED_AFTER_MS),
    ]);
    if (claimed.rowCount === 1) {
      request.idempotencyClaim = { scope, key };
      return;
    }
    const { rows } = await deps.pool.query<Stored>(
      "select state, status_code, response_body, response_headers from idempotency_records where scope = $1 and key = $2",
      [scope, key],
    );
    const stored = rows[0];
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
      // The operation may not have happened: let the client retry with the same key.
      await deps.pool.query("delete from idempotency_records where scope = $1 and key = $2", [claim.scope, claim.key]);
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const h of REPLAYED_HEADERS) {
      const v = reply.getHeader(h);
      if (v !== undefined) headers[h] = String(v);
    }
    await deps.pool.query(
      `update idempotency_records set state = 'completed', status_code = $3, response_body = $4, response_headers = $5
       where scope = $1 and key = $2`,
      [claim.scope, claim.key, reply.statusCode, typeof payload === "string" ? payload : "", headers],
    );
    return payload;
  }

  return { preHandler, onSend };
}
