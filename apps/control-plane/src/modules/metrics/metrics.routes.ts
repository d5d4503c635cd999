// GET /metrics in Prometheus text format (hidden from OpenAPI). Registered only when metrics
// are on (config.ts metricsSetting); with a token, a scrape without `Authorization: Bearer
// <token>` is a 401. Every request's duration goes into the HTTP histogram by route pattern
// (never the raw URL, which holds ids): unmatched requests are counted as route "unmatched".
import { timingSafeEqual, createHash } from "node:crypto";
import { Type } from "typebox";
import type { FastifyInstance } from "fastify";
import { DomainError } from "../../lib/errors.ts";
import { errors } from "../../lib/http-schemas.ts";
import type { Metrics } from "./metrics.ts";

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Times every request of the app (call on the root instance, before the routes). */
export function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  // A callback hook, not an async one: no promise per request for a synchronous count.
  app.addHook("onResponse", (request, reply, done) => {
    metrics.observe.request(request.method, request.routeOptions.url ?? "unmatched", reply.statusCode, reply.elapsedTime / 1000);
    done();
  });
}

export const metricsRoutes = (deps: { metrics: Metrics; token: string | null }) => async (app: FastifyInstance) => {
  const expected = deps.token === null ? null : digest(`Bearer ${deps.token}`);
  app.get(
    "/metrics",
    { schema: { hide: true, response: { 200: Type.String({ description: "Prometheus text format 0.0.4" }), ...errors() } } },
    async (request, reply) => {
      if (expected !== null) {
        const given = request.headers.authorization;
        if (given === undefined || !timingSafeEqual(digest(given), expected)) {
          throw new DomainError("authentication_required", "GET /metrics needs Authorization: Bearer <BERTH_METRICS_TOKEN>", undefined, { "www-authenticate": 'Bearer realm="metrics"' });
        }
      }
      const text = await deps.metrics.registry.metrics();
      return reply.type(deps.metrics.registry.contentType).send(text);
    },
  );
};
