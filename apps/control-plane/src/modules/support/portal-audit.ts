// Every request of a portal administrator that acted in a customer's organisation (access.ts
// let them in there as portal administrator) is written to that organisation's audit log, so
// its owners see what staff did by any route, not only through the support console: who,
// when, the method and path (no query string), and the HTTP status it ended with. Written
// before the answer leaves, so the entry exists when the caller reads the log.
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";
import { withPortalActs } from "../auth/portal-acts.ts";
import type { AuditLogRepo } from "./audit-log.repo.ts";

declare module "fastify" {
  interface FastifyRequest {
    portalActs: Set<string> | null;
  }
}

/** The audit action of a portal administrator's request: portal.<method>, e.g. portal.post. */
export const portalAction = (method: string) => `portal.${method.toLowerCase()}`;

export function installPortalAudit(api: FastifyInstance, deps: { audit: Pick<AuditLogRepo, "record">; log: { warn(o: object, m: string): void } }): void {
  api.decorateRequest("portalActs", null);
  api.addHook("onRequest", (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const organizations = new Set<string>();
    request.portalActs = organizations;
    withPortalActs(organizations, done);
  });
  api.addHook("onSend", async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const organizations = request.portalActs;
    const person = request.person;
    if (!organizations || organizations.size === 0 || !person?.isPortalAdmin) return payload;
    const status = reply.statusCode;
    const path = request.url.split("?")[0] ?? request.url;
    for (const organizationId of organizations) {
      await deps.audit
        .record({
          organizationId,
          actorUserId: person.userId,
          action: portalAction(request.method),
          targetType: "request",
          targetId: `${request.method} ${path}`,
          result: { state: status < 400 ? "succeeded" : "refused", summary: `HTTP ${status}` },
        })
        .catch((err: unknown) => deps.log.warn({ err, organizationId }, "portal administrator's request not audited"));
    }
    return payload;
  });
}
