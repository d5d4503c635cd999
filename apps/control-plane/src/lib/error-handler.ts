// Maps every error to the body { error, message, details?, retry_after?, request_id } with a
// stable code. 5xx details are logged, never sent. request_id is the request's id (its
// X-Request-Id, lib/request-id.ts), in every error body: the handlers below add it, and a
// route that answers an error body itself (dashboard, agent releases) adds it too, so no
// hook has to look at every answer for it.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isDatabaseUnavailable } from "../db/database-unavailable.ts";
import { DomainError } from "./errors.ts";
import { httpStatusOf } from "./error-codes.ts";
import { REQUEST_ID_HEADER } from "./request-id.ts";

const FASTIFY_CODES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: "invalid_json",
  FST_ERR_CTP_EMPTY_JSON_BODY: "invalid_json",
  FST_ERR_CTP_BODY_TOO_LARGE: "payload_too_large",
  FST_ERR_CTP_INVALID_MEDIA_TYPE: "unsupported_media_type",
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: "invalid_request",
};

/**
 * Errors the router raises before any route runs (Fastify's frameworkErrors option), in the
 * same body as every other error: a path parameter longer than any id (Fastify's default
 * would be a 414 echoing the whole path) and a path that is not valid percent-encoding.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // Router errors come before the onRequest hooks (lib/request-id.ts): the header is set here.
  reply.header(REQUEST_ID_HEADER, request.id);
  const request_id = request.id;
  if (err.code === "FST_ERR_MAX_PARAM_LENGTH") {
    void reply.code(400).send({ error: "validation_error", message: "A path parameter is longer than any id (at most 100 characters)", request_id });
  } else if (err.code === "FST_ERR_BAD_URL") {
    void reply.code(400).send({ error: "invalid_request", message: "The URL's path is not valid percent-encoding", request_id });
  } else {
    void reply.code(err.statusCode ?? 400).send({ error: "invalid_request", message: "The request could not be routed", request_id });
  }
}

/** Retry-After of a request that failed because PostgreSQL was unreachable (a restart or failover takes seconds). */
const DATABASE_RETRY_AFTER_S = 2;

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError | DomainError, request, reply) => {
    if (err instanceof DomainError) {
      if (err.headers) reply.headers(err.headers);
      const retry = err.headers?.["retry-after"];
      return reply.code(httpStatusOf(err.code)).send({
        error: err.code,
        message: err.message,
        ...(err.details !== undefined ? { details: err.details } : {}),
        ...(retry ? { retry_after: Number(retry) } : {}),
        request_id: request.id,
      });
    }
    if (err.validation) {
      const where = err.validationContext ?? "body";
      return reply.code(400).send({
        error: "validation_error",
        message: `Invalid request ${where}: ${err.message}`,
        details: err.validation.map((v) => ({
          path: `${where}${v.instancePath || ""}${missingProperty(v.params)}`,
          message: v.message ?? "is invalid",
        })),
        request_id: request.id,
      });
    }
    const status = err.statusCode ?? 500;
    if (status < 500) {
      return reply.code(status).send({ error: FASTIFY_CODES[err.code] ?? "invalid_request", message: err.message, request_id: request.id });
    }
    if (isDatabaseUnavailable(err)) {
      // Not a fault of the request nor a bug: said as such, with when to try again.
      request.log.warn({ err }, "request failed: database unreachable");
      return reply
        .code(503)
        .header("retry-after", String(DATABASE_RETRY_AFTER_S))
        .send({ error: "database_unavailable", message: "The database is briefly unreachable; try again shortly, with the same Idempotency-Key for a write", retry_after: DATABASE_RETRY_AFTER_S, request_id: request.id });
    }
    request.log.error({ err }, "request failed");
    return reply.code(500).send({ error: "internal_error", message: "Something went wrong on our side; try again", request_id: request.id });
  });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: "route_not_found", message: `No route for ${request.method} ${request.url.split("?")[0]}`, request_id: request.id }),
  );
}

function missingProperty(params: unknown): string {
  const p = params as { missingProperty?: string; additionalProperty?: string } | undefined;
  if (p?.missingProperty) return `/${p.missingProperty}`;
  if (p?.additionalProperty) return `/${p.additionalProperty}`;
  return "";
}
