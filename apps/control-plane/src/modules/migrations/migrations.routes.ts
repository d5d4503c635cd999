// Platform API routes of migrations (platform spec 4.3, permissions org.migrations.* of 5),
// one plugin per thing that happens to a migration: its record, the arrival of its backup,
// what the analysis found, and its run. The schemas they share, the multipart parser (tier_1)
// and the tus body parser are set here, for all of them.
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import multipart from "@fastify/multipart";
import { executionRoutes } from "./execution/execution.routes.ts";
import { findingsRoutes } from "./findings/findings.routes.ts";
import { intakeRoutes } from "./intake/intake.routes.ts";
import type { Migrations } from "./migrations.ts";
import { Analysis, Migration } from "./record/migration-schemas.ts";
import { TIER_LIMITS } from "./record/migration-states.ts";
import { recordRoutes } from "./record/record.routes.ts";

export function migrationsRoutes(deps: { migrations: Migrations }): FastifyPluginAsyncTypebox {
  const m = deps.migrations;
  return async (app) => {
    app.addSchema(Migration);
    app.addSchema(Analysis);
    await app.register(multipart, { limits: { fileSize: TIER_LIMITS.tier_1, files: 1, fields: 4, fieldSize: 1024, parts: 6 } });
    // tus bodies are read by the tus server itself, as a stream.
    app.addContentTypeParser("application/offset+octet-stream", (_request, _payload, done) => done(null));
    await app.register(recordRoutes({ record: m.record, access: m.access }));
    await app.register(findingsRoutes({ findings: m.findings, access: m.access }));
    await app.register(intakeRoutes({ intake: m.intake, receipt: m.receipt, quota: m.quota, tus: m.tus, access: m.access }));
    await app.register(executionRoutes({ execution: m.execution, access: m.access }));
  };
}
