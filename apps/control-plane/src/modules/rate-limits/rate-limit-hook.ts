// Applies rate limiting to every request of an API: each request gets its own rate context
// (rate-limiter.ts), and its answer, success or error, carries the X-RateLimit-* headers of
// the budgets the request took: take() sets them on the request's reply as it decides, so no
// hook has to run on every answer to copy them over.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import { withRateContext, type RateContext } from "./rate-limiter.ts";

export function installRateLimitHook(api: FastifyInstance): void {
  api.addHook("onRequest", (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const context: RateContext = { headers: null, reply };
    withRateContext(context, done);
  });
}
