// Routes of an environment's variables: the public API's (API keys) and the platform API's
// (sessions, for the dashboard). Values go in and never come back out: listings show names,
// a masked value and when each was set.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { personOf } from "../auth/session-principal.ts";
import { scopeOf } from "../api-keys/key-principal.ts";
import type { Scope } from "../../lib/scope.ts";
import { MASKED_VALUE, MAX_VARIABLE_NAME_LENGTH, MAX_VARIABLE_VALUE_BYTES, MAX_VARIABLES, RESERVED_VARIABLE_NAMES, VARIABLE_NAME_PATTERN, type VariablesService } from "./variables.ts";

const RULES =
  `Names match ${VARIABLE_NAME_PATTERN} (at most ${MAX_VARIABLE_NAME_LENGTH} characters; else 400 \`variable_name_invalid\`); names the ERP image or Berth set ` +
  `are refused with 400 \`variable_reserved\` (${RESERVED_VARIABLE_NAMES.join(", ")}; any case). A value is at most ${MAX_VARIABLE_VALUE_BYTES / 1024} KiB ` +
  `(UTF-8; else 400 \`variable_value_too_large\`); an environment holds at most ${MAX_VARIABLES} (409 \`variable_limit_reached\`). Values are sealed ` +
  "with the master key as they arrive and never shown again; they reach the ERP container at the next deploy (each deployment records the " +
  "variables it ran with: a retry or rollback sends those of its target).";

const Variable = Type.Object(
  {
    name: Type.String(),
    value_masked: Type.String({ description: `Always ${JSON.stringify(MASKED_VALUE)}: a value is never shown after it is set` }),
    updated_at: Type.String({ format: "date-time" }),
  },
  { title: "EnvironmentVariable" },
);
const VariableList = Type.Object({ variables: Type.Array(Variable, { description: "By name" }), total: Type.Integer() }, { title: "EnvironmentVariables" });
const NameParam = Type.String({ minLength: 1, description: `The variable's name (${VARIABLE_NAME_PATTERN}; in a path at most 100 characters)` });
const Value = Type.String({ description: `The value, at most ${MAX_VARIABLE_VALUE_BYTES / 1024} KiB (UTF-8); sealed at rest and never shown again` });
const SetVariable = Type.Object({ value: Value }, { additionalProperties: false });
const ReplaceVariables = Type.Object(
  { variables: Type.Record(Type.String(), Value, { description: `Name to value, at most ${MAX_VARIABLES}` }) },
  { additionalProperties: false },
);
/** Room for the largest allowed set of values (100 × 32 KiB) and their names. */
const COLLECTION_BODY_LIMIT = 4 * 1024 * 1024;

/** The routes of both surfaces: `base` is the environment's path, `scope` who may act on it (throws 403/404). */
function variableRoutes(
  service: VariablesService,
  base: string,
  params: ReturnType<typeof Type.Object>,
  scope: (request: { params: Record<string, string> }, write: boolean) => Promise<{ scope: Scope; environmentId: string }>,
  tags: string[],
  needs: { read: string; write: string },
): FastifyPluginAsyncTypebox {
  const withName = Type.Object({ ...params.properties, name: NameParam });
  return async (app) => {
    app.get(
      `${base}/variables`,
      {
        schema: {
          tags,
          summary: "List an environment's variables",
          description: `Names, masked values and when each was set, by name. ${needs.read}`,
          params,
          response: { 200: VariableList, ...errors(404) },
        },
      },
      async (request) => {
        const at = await scope(request as never, false);
        return service.list(at.scope, at.environmentId);
      },
    );

    app.put(
      `${base}/variables`,
      {
        bodyLimit: COLLECTION_BODY_LIMIT,
        schema: {
          tags,
          summary: "Replace all of an environment's variables",
          description: `Makes the environment's variables exactly these: the ones not named are deleted. ${RULES} ${needs.write}`,
          params,
          body: ReplaceVariables,
          response: { 200: VariableList, ...errors(404, 409) },
        },
      },
      async (request) => {
        const at = await scope(request as never, true);
        return service.replace(at.scope, at.environmentId, request.body.variables);
      },
    );

    app.put(
      `${base}/variables/:name`,
      {
        schema: {
          tags,
          summary: "Create or update an environment variable",
          description: `201 when it was created, 200 when it replaced a value. ${RULES} ${needs.write}`,
          params: withName,
          body: SetVariable,
          response: { 200: Variable, 201: Variable, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const at = await scope(request as never, true);
        const out = await service.set(at.scope, at.environmentId, (request.params as { name: string }).name, request.body.value);
        return reply.code(out.created ? 201 : 200).send(out.variable);
      },
    );

    app.delete(
      `${base}/variables/:name`,
      {
        schema: {
          tags,
          summary: "Delete an environment variable",
          description: `The ERP container loses it at the next deploy. 404 when the environment has no variable of that name. ${needs.write}`,
          params: withName,
          response: { 204: Type.Null(), ...errors(404) },
        },
      },
      async (request, reply) => {
        const at = await scope(request as never, true);
        await service.remove(at.scope, at.environmentId, (request.params as { name: string }).name);
        return reply.code(204).send(null);
      },
    );
  };
}

/** /api/public/v1/environments/{id}/variables: any key of the environment's organisation (or project) reads, full-access keys write. */
export function variablesPublicRoutes(service: VariablesService): FastifyPluginAsyncTypebox {
  return variableRoutes(
    service,
    "/environments/:id",
    IdParams,
    async (request) => ({ scope: scopeOf(request as never), environmentId: request.params.id! }),
    ["Environments"],
    { read: "Any key of the environment's organisation or project.", write: "Needs a full-access key. Supports X-Idempotency-Key." },
  );
}

/** /api/v1/projects/{project_id}/environments/{env_id}/variables: project.environments.update (project admins and up). */
export function variablesPlatformRoutes(deps: { variables: VariablesService; access: Pick<Access, "requireProject"> }): FastifyPluginAsyncTypebox {
  return variableRoutes(
    deps.variables,
    "/projects/:project_id/environments/:env_id",
    Type.Object({ project_id: Uuid, env_id: Uuid }),
    async (request) => {
      const projectId = request.params.project_id!;
      const a = await deps.access.requireProject(personOf(request as never), projectId, "project.environments.update", "Environment");
      return { scope: { organizationId: a.organizationId, projectId }, environmentId: request.params.env_id! };
    },
    ["Environments"],
    { read: "Needs project.environments.update.", write: "Needs project.environments.update." },
  );
}
