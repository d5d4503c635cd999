// Liveness and readiness, for load balancers and orchestrators (hidden from OpenAPI).
// /healthz: the process answers HTTP (no dependency asked; a restart would not help a database outage).
// /readyz: this replica can serve: the database answers `select 1` and the job queue
// (pg-boss) is running and answers its queue-size query, each within a short timeout;
// else 503 naming the failing checks and why. While the replica drains (SIGTERM,
// lifecycle/drain.ts), /readyz answers 503 with status "draining" whatever the checks say, so
// the load balancer sends it nothing new; /healthz stays 200 until the process exits.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type pg from "pg";
import { checkDatabase, checkJobs } from "../../db/readiness.ts";
import type { Jobs } from "../../db/jobs.ts";
import { StringEnum } from "../../lib/http-schemas.ts";

const CheckState = StringEnum(["ok", "failed"] as const);

export const Readiness = Type.Object({
  status: StringEnum(["ok", "unavailable", "draining"] as const, { description: "draining: this replica is shutting down (SIGTERM) and hands its work to the others" }),
  checks: Type.Object({ database: CheckState, jobs: CheckState }),
  reasons: Type.Optional(
    Type.Object({ database: Type.Optional(Type.String()), jobs: Type.Optional(Type.String()) }, { description: "Why each failing check failed" }),
  ),
});

export interface HealthDeps {
  pool: pg.Pool;
  jobs: Pick<Jobs, "running" | "queueSize">;
  /** The queue whose size the jobs check asks for (any queue this replica defined). */
  probeQueue: string;
  /** Per check (default 2 s). */
  timeoutMs?: number;
  /** True once the replica drains: not ready, whatever the checks say. */
  draining?: () => boolean;
}

export const healthRoutes =
  (deps: HealthDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    const timeoutMs = deps.timeoutMs ?? 2_000;
    app.get("/healthz", { schema: { hide: true, response: { 200: Type.Object({ status: Type.Literal("ok") }) } } }, async () => ({ status: "ok" as const }));

    app.get("/readyz", { schema: { hide: true, response: { 200: Readiness, 503: Readiness } } }, async (_request, reply) => {
      const [database, jobs] = await Promise.all([checkDatabase(deps.pool, timeoutMs), checkJobs(deps.jobs, deps.probeQueue, timeoutMs)]);
      const reasons = { ...(database !== null ? { database } : {}), ...(jobs !== null ? { jobs } : {}) };
      const ok = database === null && jobs === null;
      const draining = deps.draining?.() === true;
      return reply.code(ok && !draining ? 200 : 503).send({
        status: draining ? "draining" : ok ? "ok" : "unavailable",
        checks: { database: database === null ? "ok" : "failed", jobs: jobs === null ? "ok" : "failed" },
        ...(ok ? {} : { reasons }),
      });
    });
  };
