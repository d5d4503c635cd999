// Every request's id (Fastify's request.id): the X-Request-Id a trusted proxy sent when it is
// sane (1-128 visible ASCII characters), else a new UUID. "Trusted" is what Fastify itself
// believes X-Forwarded-For from (trustProxy, BERTH_TRUST_PROXY): the same rule, applied to
// the socket's address. The id is answered in the X-Request-Id header of every response
// (hijacked ones too, through hijack() below), in error bodies (request_id, error-handler.ts) and in every log line (reqId).
import { randomUUID } from "node:crypto";
import proxyAddr from "@fastify/proxy-addr";
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from "fastify";

type RawRequest = import("node:http").IncomingMessage;

export const REQUEST_ID_HEADER = "x-request-id";
const SANE_ID = /^[\x21-\x7e]{1,128}$/;

/** Whether the direct peer is a proxy trusted by `trustProxy`, as Fastify decides it for X-Forwarded-For. */
export function trustedPeer(trustProxy: FastifyServerOptions["trustProxy"] | number): (address: string | undefined) => boolean {
  if (trustProxy === true) return () => true;
  // A hop count cannot vouch for the direct peer (Fastify fails closed the same way).
  if (trustProxy === false || trustProxy === undefined || typeof trustProxy === "number") return () => false;
  if (typeof trustProxy === "function") return (address) => address !== undefined && trustProxy(address, 0);
  const list = typeof trustProxy === "string" ? trustProxy.split(",").map((e) => e.trim()) : trustProxy;
  const trusts = proxyAddr.compile(list);
  return (address) => address !== undefined && trusts(address, 0);
}

/** Fastify's genReqId for the given trustProxy setting. */
export function requestIdGenerator(trustProxy: FastifyServerOptions["trustProxy"] | number): (req: RawRequest) => string {
  const trusted = trustedPeer(trustProxy);
  return (req) => {
    const given = req.headers[REQUEST_ID_HEADER];
    if (typeof given === "string" && SANE_ID.test(given) && trusted(req.socket?.remoteAddress)) return given;
    return randomUUID();
  };
}

/**
 * Answers the id in X-Request-Id on every response, set before any handler or error can run.
 * It is one of Fastify's reply headers (a raw header would make Node validate and merge every
 * header of every answer one by one): a route that hijacks its reply calls hijack() below, so
 * that answer, written on the raw response, carries the id too.
 */
export function installRequestIdHeader(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
}

/** reply.hijack() keeping X-Request-Id: what the route then writes on reply.raw carries the id. */
export function hijack(request: FastifyRequest, reply: FastifyReply): void {
  reply.raw.setHeader(REQUEST_ID_HEADER, request.id);
  reply.hijack();
}
