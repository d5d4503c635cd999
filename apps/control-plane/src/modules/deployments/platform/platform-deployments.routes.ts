// Platform API routes of the deployment lifecycle (platform spec 4.1). Routes parse and
// answer; the rules live in the operations service (operations/operations.service.ts).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, StringEnum, Timestamp, Uuid, refTo, LiteralUnion } from "../../../lib/http-schemas.ts";
import { personOf } from "../../auth/session-principal.ts";
import { Environment, EnvironmentUpdate } from "../../environments/environments.routes.ts";
import { deploymentRecord, logEntry, progressView } from "../operations/deployment-record.ts";
import { DEPLOYMENT_STATUSES } from "../operations/deployment-state.ts";
import { DeployOptionFields, emptyBodyIsNoOptions, ModulesResultField } from "../operations/deploy-options.ts";
import { TestsResultField } from "../operations/tests-result.ts";
import type { DeploymentsService } from "../operations/operations.service.ts";
import { GIT_BRANCH_PATTERN } from "../../../lib/git-source.ts";

const TAG = ["Deployments"];
const LEVELS = ["debug", "info", "warning", "error"] as const;
const BRANCH = Type.String({ minLength: 1, maxLength: 255, pattern: GIT_BRANCH_PATTERN, description: "Git branch name (git check-ref-format), never starting with -" });
const COMMIT = Type.String({ pattern: "^[0-9a-fA-F]{7,64}$", description: "Full commit id (hex)" });

export const DeploymentRecord = Type.Object(
  {
    id: Uuid,
    organization_id: { ...Uuid, description: "The organisation of its project, e.g. for the event stream (GET /events?organization_id=)" },
    project_id: Uuid,
    environment_id: Uuid,
    vm_id: Nullable(Uuid),
    kind: Type.String({ description: "deploy, redeploy, rollback, restart, start, stop, destroy, backup or restore" }),
    version: Type.Integer({ description: "Per-environment sequence number" }),
    status: StringEnum(DEPLOYMENT_STATUSES),
    trigger: Type.String({ description: "manual, git_push, webhook, scheduled (a scheduled backup), rollback, auto_deploy, destroy, config_update, migration (the deploy that runs a migration's steps 3 to 12), development_limit (a development environment stopped to make room for one a push created)" }),
    triggered_by: Nullable(Uuid),
    git_branch: Nullable(Type.String()),
    git_commit: Nullable(Type.String()),
    git_message: Nullable(Type.String()),
    rollback_from_id: Nullable(Uuid),
    extra_data: Type.Record(Type.String(), Type.Unknown(), {
      description: "retry_of, rollback_to, config {cpu_cores, ram_mb, disk_gb, workers, variables (the names of the environment variables it ran with; values are never shown)}, addons, delete_data, modules {upgrade} and init {without_demo, language, country} as requested",
    }),
    container_id: Nullable(Type.String()),
    image_tag: Nullable(Type.String()),
    created_at: Timestamp,
    started_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
    duration_seconds: Nullable(Type.Number()),
    error_message: Nullable(Type.String()),
    modules: ModulesResultField,
    tests: TestsResultField,
    admin_password: Type.Optional(
      Type.String({
        description:
          "The environment's ERP master password (admin_passwd), only in the answer of the deploy that generated it (the environment's first); " +
          "never shown again: rotate it with POST /environments/{env_id}/admin-password/rotate",
      }),
    ),
    admin_login_password: Type.Optional(
      Type.String({
        description:
          "The password of the ERP's administrator (login `admin`), only in the answer of the deploy that generated it (the environment's first), " +
          "which sets it in the new database instead of Odoo's default admin/admin; never shown again: rotate it with POST /environments/{env_id}/admin-login/rotate",
      }),
    ),
  },
  { $id: "DeploymentRecord", title: "DeploymentRecord" },
);
const Record_ = refTo(DeploymentRecord);
const EnvironmentRef = refTo(Environment);

/** One log line of a deployment, as both APIs show it. */
export const LogEntry = Type.Object({
  id: Type.String(),
  deployment_id: Uuid,
  timestamp: Timestamp,
  level: StringEnum(["debug", "info", "warning", "error"] as const),
  message: Type.String(),
  step: Nullable(Type.String()),
  data: Type.Record(Type.String(), Type.Unknown()),
});
const Progress = Type.Object({
  deployment_id: Uuid,
  status: Type.String(),
  progress_percent: Type.Integer({ minimum: 0, maximum: 100 }),
  current_step: Type.String(),
  started_at: Nullable(Timestamp),
  error_message: Nullable(Type.String()),
  steps: Type.Array(
    Type.Object({
      id: Type.String(),
      name: Type.String(),
      description: Type.Optional(Type.String()),
      status: StringEnum(["completed", "running", "pending", "failed"] as const, { description: "failed marks the step a failed or cancelled deployment stopped at" }),
      logs: Type.Optional(Type.Array(Type.Object({ message: Type.String(), timestamp: Timestamp }))),
    }),
  ),
});
const Message = Type.Object({ message: Type.String() });
const EnvironmentDeploy = Type.Object({
  message: Type.String(),
  skipped: Type.Boolean({ description: "True when nothing was started because the environment already runs (no force)" }),
  deployment: Nullable(Record_),
  migration_restore_reset: Type.Optional(Type.Boolean({ description: "force_restore cleared the restore flag: the next deployment restores the migration backup again" })),
});
const DeploymentParams = Type.Object({ deployment_id: Uuid });
const DEPLOY_OPTIONS_TEXT =
  " `modules` {upgrade: \"changed\" (default) | \"all\" | [module names]} and `init` {without_demo (default true), language, country} (a new database only) " +
  "are kept in extra_data and sent to the server; the modules it installed or upgraded are the deployment's `modules`. " +
  "The environment's first deploy generates its ERP master password and its administrator's password, returned once as `admin_password` and " +
  "`admin_login_password`.";

export function platformDeploymentsRoutes(service: DeploymentsService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addSchema(DeploymentRecord);

    app.post(
      "/deployments",
      {
        schema: {
          tags: TAG,
          summary: "Create a deployment",
          description:
            "Deploys an environment of a project (trigger manual). 409 while another deployment of the environment is pending or running. At most 10 per minute per organisation." +
            DEPLOY_OPTIONS_TEXT,
          body: Type.Object({ project_id: Uuid, environment_id: Uuid, git_branch: BRANCH, git_commit: Type.Optional(COMMIT), ...DeployOptionFields }, { additionalProperties: false }),
          response: { 201: Record_, ...errors(404, 409) },
        },
      },
      async (request, reply) => reply.code(201).send(deploymentRecord(await service.createDeployment(personOf(request), request.body))),
    );

    app.get(
      "/deployments",
      {
        schema: {
          tags: TAG,
          summary: "List deployments",
          description: "Newest first, across the projects the caller can see (or one project).",
          querystring: Type.Object(
            {
              project_id: Type.Optional(Uuid),
              status: Type.Optional(LiteralUnion(DEPLOYMENT_STATUSES)),
              skip: Type.Integer({ minimum: 0, default: 0 }),
              limit: Type.Integer({ minimum: 1, maximum: 100, default: 50 }),
            },
            { additionalProperties: false },
          ),
          response: { 200: Type.Array(Record_), ...errors(404) },
        },
      },
      async (request) => (await service.listDeployments(personOf(request), request.query)).map(deploymentRecord),
    );

    app.get(
      "/deployments/:deployment_id",
      { schema: { tags: TAG, summary: "Get a deployment", params: DeploymentParams, response: { 200: Record_, ...errors(404) } } },
      async (request) => deploymentRecord(await service.load(personOf(request), request.params.deployment_id, "project.deployments.view")),
    );

    app.get(
      "/deployments/:deployment_id/logs",
      {
        schema: {
          tags: TAG,
          summary: "Deployment logs",
          description: "Log entries in the order they were written; `level` keeps entries of exactly that level.",
          params: DeploymentParams,
          querystring: Type.Object(
            {
              level: Type.Optional(LiteralUnion(LEVELS)),
              skip: Type.Integer({ minimum: 0, default: 0 }),
              limit: Type.Integer({ minimum: 1, maximum: 500, default: 500 }),
            },
            { additionalProperties: false },
          ),
          response: { 200: Type.Object({ deployment_id: Uuid, logs: Type.Array(LogEntry) }), ...errors(404) },
        },
      },
      async (request) => {
        const { deployment, rows } = await service.deploymentLogs(personOf(request), request.params.deployment_id, request.query);
        return { deployment_id: deployment.id, logs: rows.map(logEntry) };
      },
    );

    app.get(
      "/deployments/:deployment_id/progress",
      { schema: { tags: TAG, summary: "Deployment progress", description: "Steps in order with their state and latest log lines.", params: DeploymentParams, response: { 200: Progress, ...errors(404) } } },
      async (request) => {
        const { deployment, byStep } = await service.progress(personOf(request), request.params.deployment_id);
        return progressView(deployment, byStep);
      },
    );

    app.post(
      "/deployments/:deployment_id/retry",
      {
        schema: {
          tags: TAG,
          summary: "Retry a failed deployment",
          description: "A new deployment (next version) with the same branch, commit and configuration; extra_data.retry_of names the original. 400 unless the original failed.",
          params: DeploymentParams,
          response: { 200: Record_, ...errors(404, 409) },
        },
      },
      async (request) => deploymentRecord(await service.retry(personOf(request), request.params.deployment_id)),
    );

    app.post(
      "/deployments/:deployment_id/rollback",
      {
        schema: {
          tags: TAG,
          summary: "Roll back to this deployment",
          description:
            "The path names the successful deployment to go back TO. Code, image, configuration and addons return to it; the database and file store are not rolled back.",
          params: DeploymentParams,
          response: { 200: Record_, ...errors(404, 409) },
        },
      },
      async (request) => deploymentRecord(await service.rollback(personOf(request), request.params.deployment_id)),
    );

    app.post(
      "/deployments/:deployment_id/cancel",
      {
        schema: {
          tags: TAG,
          summary: "Cancel a deployment",
          description: "Allowed while the deployment is pending or running; the agent stops at its next step. Partial resources are not cleaned up.",
          params: DeploymentParams,
          response: { 200: Message, ...errors(404) },
        },
      },
      async (request) => service.cancelDeployment(personOf(request), request.params.deployment_id),
    );

    environmentOperationRoutes(app, service);
  };
}

type RoutesApp = Parameters<FastifyPluginAsyncTypebox>[0];

/** The operations on a whole environment: destroy, deploy (two spellings) and its settings. */
function environmentOperationRoutes(app: RoutesApp, environments: DeploymentsService): void {
  app.delete(
    "/deployments/environment/:environment_id/destroy",
    {
      schema: {
        tags: TAG,
        summary: "Destroy an environment",
        description:
          "Removes the application and database containers, the database volume, the network and the configuration; with delete_data also the data directory. " +
          "Records a destroy deployment; the environment becomes pending and inactive. A deployment in progress is cancelled first.",
        params: Type.Object({ environment_id: Uuid }),
        querystring: Type.Object({ delete_data: Type.Boolean({ default: false }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            message: Type.String(),
            environment_id: Uuid,
            deployment_id: Uuid,
            deleted_containers: Type.Boolean(),
            deleted_database: Type.Boolean(),
            deleted_data: Type.Boolean(),
          }),
          ...errors(404),
        },
      },
    },
    async (request) => {
      const { op, env } = await environments.destroyEnvironment(personOf(request), request.params.environment_id, request.query.delete_data);
      return {
        message: "Environment destroy started",
        environment_id: env.id,
        deployment_id: op.id,
        deleted_containers: true,
        deleted_database: true,
        deleted_data: request.query.delete_data,
      };
    },
  );

  app.post(
    "/environments/:environment_id/deploy",
    {
      schema: {
        tags: TAG,
        summary: "Deploy an environment",
        description:
          "force: true redeploys from the current configuration (a deployment in progress is cancelled; database and file store kept). " +
          "Without force: 409 while a deployment is in progress, and nothing happens (200, skipped) when the environment already runs." +
          DEPLOY_OPTIONS_TEXT,
        params: Type.Object({ environment_id: Uuid }),
        body: Type.Object({ force: Type.Boolean({ default: false }), git_branch: Type.Optional(BRANCH), ...DeployOptionFields }, { additionalProperties: false }),
        response: { 200: EnvironmentDeploy, 201: EnvironmentDeploy, ...errors(404, 409) },
      },
    },
    async (request, reply) => {
      const out = await environments.deployEnvironment(personOf(request), request.params.environment_id, request.body ?? { force: false });
      return reply.code(out.skipped ? 200 : 201).send({ ...out, deployment: out.deployment ? deploymentRecord(out.deployment) : null });
    },
  );

  app.post(
    "/projects/:project_id/environments/:env_id/deploy",
    {
      schema: {
        tags: TAG,
        summary: "Deploy a project's environment",
        description:
          "force_restore=true on an environment created by a migration whose backup was restored: the next deployment restores the backup again, replacing current data." +
          DEPLOY_OPTIONS_TEXT,
        params: Type.Object({ project_id: Uuid, env_id: Uuid }),
        querystring: Type.Object({ force_restore: Type.Boolean({ default: false }) }, { additionalProperties: false }),
        body: Type.Object(DeployOptionFields, { additionalProperties: false, description: "Optional: an absent body takes the defaults" }),
        response: { 201: EnvironmentDeploy, ...errors(404, 409) },
      },
      preValidation: emptyBodyIsNoOptions,
    },
    async (request, reply) => {
      const out = await environments.deployProjectEnvironment(personOf(request), request.params.project_id, request.params.env_id, request.query.force_restore, request.body);
      return reply.code(201).send({ ...out, deployment: deploymentRecord(out.deployment) });
    },
  );

  app.patch(
    "/projects/:project_id/environments/:env_id",
    {
      schema: {
        tags: ["Environments"],
        summary: "Change auto-deploy, branch, domain, aliases or size",
        description:
          "Omitted fields are left unchanged. Needs project.environments.update. Domain and aliases follow the public API's " +
          "PATCH /environments/{id}: 400 `invalid_domain` or `domain_reserved`, 409 `domain_taken`; a new size (cpu_cores, ram_mb, disk_gb, workers) applies from the next deploy; a deployed environment's server is told " +
          "at once and its proxy serves the new names without a deploy.",
        params: Type.Object({ project_id: Uuid, env_id: Uuid }),
        body: Type.Object(
          { auto_deploy: Type.Optional(Type.Boolean()), git_branch: Type.Optional(BRANCH), ...EnvironmentUpdate },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: EnvironmentRef, ...errors(404, 409) },
      },
    },
    async (request) => environments.updateEnvironment(personOf(request), request.params.project_id, request.params.env_id, request.body),
  );
}
