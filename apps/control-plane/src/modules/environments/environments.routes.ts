// Public API routes for environments (named in public spec 4.5; shapes designed here).
import { Type } from "@sinclair/typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import type { EnvironmentsService } from "./environments.service.ts";

export const Environment = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    server_id: Nullable(Uuid),
    name: Type.String(),
    status: Type.String({ description: "pending (never deployed), deploying, running, stopped or error" }),
    git_branch: Type.String(),
    auto_deploy: Type.Boolean(),
    domain: Nullable(Type.String()),
    cpu_cores: Type.Integer(),
    ram_mb: Type.Integer(),
    disk_gb: Type.Integer(),
    workers: Type.Integer(),
    is_active: Type.Boolean(),
    container_id: Nullable(Type.String()),
    container_name: Nullable(Type.String()),
    migration_id: Nullable(Uuid),
    migration_restore_completed: Type.Boolean(),
    migration_restore_completed_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: "Environment", title: "Environment" },
);
const EnvironmentRef = Type.Ref(Environment) as unknown as typeof Environment;

const CreateEnvironment = Type.Object(
  {
    project_id: Uuid,
    name: Type.String({ minLength: 1, maxLength: 255 }),
    git_branch: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: "Defaults to the project's default_branch" })),
    domain: Type.Optional(
      Type.String({ maxLength: 253, pattern: "^(?=.{1,253}$)([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\\.)+[a-zA-Z]{2,63}$" }),
    ),
    auto_deploy: Type.Optional(Type.Boolean({ default: false })),
    cpu_cores: Type.Optional(Type.Integer({ minimum: 1, maximum: 64, default: 1 })),
    ram_mb: Type.Optional(Type.Integer({ minimum: 256, maximum: 262144, default: 2048 })),
    disk_gb: Type.Optional(Type.Integer({ minimum: 1, maximum: 16384, default: 20 })),
    workers: Type.Optional(Type.Integer({ minimum: 0, maximum: 64, default: 2 })),
  },
  { additionalProperties: false },
);

export function environmentsRoutes(service: EnvironmentsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/projects/:id/environments",
      {
        schema: {
          tags: ["Environments"],
          summary: "List a project's environments",
          params: IdParams,
          querystring: PageQuery,
          response: { 200: Page(EnvironmentRef), ...errors(404) },
        },
      },
      async (request) => service.listForProject(scopeOf(request), request.params.id, request.query),
    );

    app.get(
      "/environments/:id",
      { schema: { tags: ["Environments"], summary: "Get an environment", params: IdParams, response: { 200: EnvironmentRef, ...errors(404) } } },
      async (request) => service.get(scopeOf(request), request.params.id),
    );

    app.post(
      "/environments",
      {
        schema: {
          tags: ["Environments"],
          summary: "Create an environment",
          description: "Creates an environment (status pending) on the project's server. Needs a full-access key. Supports X-Idempotency-Key.",
          body: CreateEnvironment,
          response: { 201: EnvironmentRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        return reply.code(201).send(await service.create(scopeOf(request), request.body));
      },
    );
  };
}
