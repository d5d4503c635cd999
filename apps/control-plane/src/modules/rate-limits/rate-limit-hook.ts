// Applies rate limiting to every request of an API: each request gets its own rate context
// (rate-limiter.ts), and its answer, success or error, carries the X-RateLimit-* headers of
// the budgets the request took.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import { withRateContext, type RateContext } from "./rate-limiter.ts";

declare module "fastify" {
  interface FastifyRequest {
    rateContext: RateContext | null;
  }
}

export function installRateLimitHook(api: FastifyInstance): void {
  api.decorateRequest("rateContext", null);
  api.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const context: RateContext = { headers: null };
    request.rateContext = context;
    withRateContext(context, done);
  });
  api.addHook("onSend", (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void) => {
    const headers = request.rateContext?.headers;
    if (headers) reply.headers(headers);
    done(null, payload);
  });
}
