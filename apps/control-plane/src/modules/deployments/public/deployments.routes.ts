// Public API routes for environment actions, deployment history and task polling
// (public spec 4.1, 4.2, 4.4).
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, IdParams, Nullable, Page, PageQuery, StringEnum, Timestamp, Uuid, refTo } from "../../../lib/http-schemas.ts";
import { keyActorOf, scopeOf } from "../../api-keys/key-principal.ts";
import { ACTIONS, type Action, type DeploymentsService } from "../operations/operations.service.ts";
import { TASK_STATUSES } from "../operations/deployment-state.ts";
import { LogEntry } from "../platform/platform-deployments.routes.ts";
import { AdminLoginPasswordField, AdminPasswordField, DeployOptionFields, emptyBodyIsNoOptions, ModulesResultField } from "../operations/deploy-options.ts";
import { TestsResultField } from "../operations/tests-result.ts";

export const Task = Type.Object(
  {
    id: Uuid,
    type: Type.String({ description: "deploy, redeploy, restart, start or stop" }),
    status: StringEnum(TASK_STATUSES),
    environment_id: Nullable(Uuid),
    progress_percent: Type.Integer({ minimum: 0, maximum: 100 }),
    current_step: Nullable(Type.String()),
    steps_completed: Type.Integer(),
    total_steps: Type.Integer(),
    started_at: Nullable(Timestamp),
    completed_at: Nullable(Timestamp),
    duration_seconds: Nullable(Type.Integer()),
    error_message: Nullable(Type.String()),
    triggered_by: Nullable(Type.String({ description: "User id; null when an API key triggered it" })),
    created_at: Timestamp,
    modules: ModulesResultField,
    tests: TestsResultField,
  },
  { $id: "Task", title: "Task" },
);
const TaskRef = refTo(Task);

export const ActionResponse = Type.Object(
  {
    task_id: Uuid,
    status: Type.Literal("queued"),
    environment_id: Uuid,
    poll_url: Type.String({ examples: ["/api/public/v1/deployments/0b7c…"] }),
  },
  { $id: "ActionResponse", title: "ActionResponse" },
);
const ActionResponseRef = refTo(ActionResponse);

export const DeployActionResponse = Type.Object({ ...ActionResponse.properties, admin_password: AdminPasswordField, admin_login_password: AdminLoginPasswordField }, { $id: "DeployActionResponse", title: "DeployActionResponse" });
const DeployActionResponseRef = refTo(DeployActionResponse);
const DeployBody = Type.Object(DeployOptionFields, { additionalProperties: false, description: "Optional: an absent body takes the defaults" });
const DEPLOY_OPTIONS_TEXT =
  " Optional body: `modules` {upgrade: \"changed\" (default) | \"all\" | [module names]} and `init` {without_demo (default true), language, country} " +
  "for a new database; both are kept with the deployment (extra_data) and reported back per module in the task's `modules`. " +
  "The environment's first deploy generates its ERP master password and its administrator's password and returns them once as `admin_password` " +
  "and `admin_login_password`.";

const ACTION_TEXT: Record<Action, string> = {
  deploy: "Full redeployment: pull the latest Git code, update containers, run database migrations.",
  redeploy: "Redeploy the environment from its current configuration.",
  restart: "Restart containers without redeploying code. The environment must be running.",
  start: "Start a stopped environment.",
  stop: "Stop the containers of a running environment; data is preserved.",
};

export function deploymentsRoutes(service: DeploymentsService, publicPrefix: string): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.addSchema(DeployActionResponse);
    for (const action of ["deploy", "redeploy"] as const) {
      for (const path of [`/environments/:id/${action}`, `/environments/:id/actions/${action}`]) {
        app.post(
          path,
          {
            config: { shownOnce: ["admin_password", "admin_login_password"] },
            preValidation: emptyBodyIsNoOptions,
            schema: {
              tags: ["Deployment actions"],
              summary: `${action[0]!.toUpperCase()}${action.slice(1)} an environment`,
              description: `${ACTION_TEXT[action]} Returns 202 at once; poll poll_url until the task is completed, failed or cancelled.` + DEPLOY_OPTIONS_TEXT +
                " Needs a full-access key. Supports Idempotency-Key and X-Idempotency-Key.",
              params: IdParams,
              body: DeployBody,
              response: { 202: DeployActionResponseRef, ...errors(404, 409) },
            },
          },
          async (request, reply) => {
            const row = await service.requestAction(scopeOf(request), request.params.id, action, keyActorOf(request), request.body);
            return reply.code(202).send({
              task_id: row.id,
              status: "queued" as const,
              environment_id: row.environmentId,
              poll_url: `${publicPrefix}/deployments/${row.id}`,
              admin_password: row.adminPassword ?? null,
              admin_login_password: row.adminLoginPassword ?? null,
            });
          },
        );
      }
    }
    for (const action of ACTIONS.filter((a) => a !== "deploy" && a !== "redeploy")) {
      for (const path of [`/environments/:id/${action}`, `/environments/:id/actions/${action}`]) {
        app.post(
          path,
          {
            schema: {
              tags: ["Deployment actions"],
              summary: `${action[0]!.toUpperCase()}${action.slice(1)} an environment`,
              description: `${ACTION_TEXT[action]} Returns 202 at once; poll poll_url until the task is completed, failed or cancelled. ` +
                "Needs a full-access key. Supports Idempotency-Key and X-Idempotency-Key.",
              params: IdParams,
              response: { 202: ActionResponseRef, ...errors(404, 409) },
            },
          },
          async (request, reply) => {
            const row = await service.requestAction(scopeOf(request), request.params.id, action, keyActorOf(request));
            return reply.code(202).send({
              task_id: row.id,
              status: "queued" as const,
              environment_id: row.environmentId,
              poll_url: `${publicPrefix}/deployments/${row.id}`,
            });
          },
        );
      }
    }

    app.get(
      "/environments/:id/deployments",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Deployment history of an environment",
          description: "Deploy and redeploy tasks, newest first.",
          params: IdParams,
          querystring: PageQuery,
          response: { 200: Page(TaskRef), ...errors(404) },
        },
      },
      async (request) => service.history(scopeOf(request), request.params.id, request.query),
    );

    app.get(
      "/deployments/:id/logs",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Log lines of a task",
          description:
            "The task's log lines in the order they were written, oldest first, a page at a time: pass pagination.next_cursor as `cursor` for the next page. " +
            "Lines written later appear after the last page; follow them live on the event stream (`deployment.log` events, a ticket from POST /events/tickets).",
          params: IdParams,
          querystring: Type.Object(
            {
              limit: Type.Integer({ minimum: 1, maximum: 500, default: 100, description: "Page size, 1 to 500" }),
              cursor: Type.Optional(Type.String({ maxLength: 32, description: "pagination.next_cursor of the previous page" })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Page(LogEntry), ...errors(404) },
        },
      },
      async (request) => service.logs(scopeOf(request), request.params.id, request.query),
    );

    app.get(
      "/deployments/:id",
      {
        schema: {
          tags: ["Deployments"],
          summary: "Get a task",
          description: "Poll until status is completed, failed or cancelled.",
          params: IdParams,
          response: { 200: TaskRef, ...errors(404) },
        },
      },
      async (request) => service.getTask(scopeOf(request), request.params.id),
    );
  };
}
