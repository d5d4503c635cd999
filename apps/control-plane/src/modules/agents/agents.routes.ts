// Routes the agent itself calls: enrolment (HTTP) and the link (WebSocket). No API key:
// enrolment is authorised by its one-time token, the link by the agent's signed challenge.
// The link's limits before its handshake count by address: request.ip, the socket's or the
// one a trusted proxy forwards (trustProxy, BERTH_TRUST_PROXY). A draining replica refuses new
// links with 503 replica_draining before the upgrade; the agent retries and the load
// balancer sends it to another replica.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { AGENT_CONNECT_PATH, AGENT_ENROLL_PATH, EnrollRequest, EnrollResponse } from "@berth/protocol";
import { DomainError } from "../../lib/errors.ts";
import { ErrorBody } from "../../lib/http-schemas.ts";
import type { AgentGateway } from "./link/gateway.ts";
import type { Enrollment } from "./enrollment.ts";

export function agentsRoutes(deps: { enrollment: Enrollment; gateway: AgentGateway }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post(
      AGENT_ENROLL_PATH,
      {
        schema: {
          hide: true,
          body: EnrollRequest,
          response: { 200: EnrollResponse, 400: ErrorBody, 401: ErrorBody },
        },
      },
      async (request) => deps.enrollment.enroll(request.body),
    );

    app.get(
      AGENT_CONNECT_PATH,
      {
        websocket: true,
        schema: { hide: true, response: { 503: ErrorBody } },
        onRequest: async () => {
          if (!deps.gateway.accepting()) throw new DomainError("replica_draining", "This control-plane replica is shutting down; connect again (to another replica)", undefined, { "retry-after": "1" });
        },
      },
      (socket, request) => deps.gateway.accept(socket, request.ip),
    );
  };
}
