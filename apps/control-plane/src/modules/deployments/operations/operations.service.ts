// Rules for operations on environments requested through the public API: one active
// operation per environment, and the status each action needs (public spec 3.2, 4.1).
import { HISTORY_KINDS, isDeployKind } from "./deployment-state.ts";
import { stepsForKind, type OperationKind } from "@berth/protocol";
import type { Clock } from "../../../lib/clock.ts";
import type { CursorCodec } from "../../../lib/cursor.ts";
import { DomainError, notFound, type ErrorCode } from "../../../lib/errors.ts";
import { listPage, type PageRequest } from "../../../db/keyset.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { EnvironmentsRepo } from "../../environments/environments.repo.ts";
import type { DeploymentRow, DeploymentsRepo } from "./operations.repo.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import { taskView } from "./task-view.ts";
import { logEntry } from "./deployment-record.ts";
import { sealedSnapshot } from "../../environments/variables.ts";
import { deployOptionsExtra, type DeployOptions } from "./deploy-options.ts";
import type { ErpCredentials } from "../../environments/erp-credentials.ts";
import { IDEMPOTENCY_TTL_MS, type IdempotencyClaim } from "../../idempotency/idempotency.ts";

export const ACTIONS = ["deploy", "redeploy", "restart", "start", "stop"] as const;
export type Action = (typeof ACTIONS)[number];

export interface Requirement {
  status: string;
  code: ErrorCode;
  message: string;
}

/** Environment status each action needs; deploy and redeploy need none. */
const REQUIRED_STATUS: Partial<Record<Action, Requirement>> = {
  restart: { status: "running", code: "environment_not_running", message: "The environment is not running; start or deploy it first" },
  stop: { status: "running", code: "environment_not_running", message: "The environment is not running" },
  start: { status: "stopped", code: "environment_not_stopped", message: "The environment is not stopped" },
};

/** Who asked: a user (platform API) or an API key (public API), and the request's idempotency key if it sent one. */
export interface Actor {
  userId: string | null;
  apiKeyId: string | null;
  idempotency?: IdempotencyClaim | null;
}

/** How an actor is named on what it issued (a command's issued_by, a cancel's by). */
const issuerOf = (actor: Actor) => (actor.userId ? `user:${actor.userId}` : `api_key:${actor.apiKeyId}`);


export interface OperationOptions {
  id?: string;
  extraData?: Record<string, unknown>;
  required?: Requirement;
  trigger?: string;
  git?: { branch?: string | null; commit?: string | null; message?: string | null };
  imageTag?: string | null;
  rollbackFromId?: string | null;
  /** Cancel an operation in progress instead of refusing with 409 (platform redeploy with force). */
  force?: boolean;
  forced?: boolean;
  /** The 409 message when another operation is active. */
  busyMessage?: string;
  /** pending for platform deployment records (platform spec 3.1); the public API's tasks start queued. */
  initialStatus?: "pending" | "queued";
}

/**
 * The configuration an operation ran with (platform spec 2.1 extra_data.config): resources,
 * and the environment variables as they were, still sealed (name to sealed value).
 */
export function configOf(env: Pick<EnvironmentRow, "cpuCores" | "ramMb" | "diskGb" | "workers" | "variables">) {
  return { cpu_cores: env.cpuCores, ram_mb: env.ramMb, disk_gb: env.diskGb, workers: env.workers, variables: sealedSnapshot(env.variables) };
}

/**
 * An operation just requested; `adminPassword` and `adminLoginPassword`: the master password
 * and the administrator's login password its environment got now (shown once).
 */
export type RequestedOperation = DeploymentRow & { adminPassword?: string; adminLoginPassword?: string };

export function createDeploymentsService(deps: {
  deployments: DeploymentsRepo;
  environments: Pick<EnvironmentsRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
  dispatcher: Pick<Dispatcher, "dispatch">;
  credentials: Pick<ErpCredentials, "ensure" | "ensureLogin">;
}) {
  return {
    /** Any operation on an environment: one active at a time, then dispatched to the agent. */
    async requestOperation(
      scope: Scope,
      environmentId: string,
      kind: OperationKind,
      actor: Actor,
      opts: OperationOptions = {},
    ): Promise<RequestedOperation> {
      const required = opts.required;
      const deploys = isDeployKind(kind);
      const now = deps.clock.now();
      const outcome = await deps.deployments.createOperation(
        scope,
        environmentId,
        {
          ...(opts.id ? { id: opts.id } : {}),
          kind,
          status: opts.initialStatus ?? "queued",
          trigger: opts.trigger ?? (kind === "destroy" ? "destroy" : kind === "rollback" ? "rollback" : "manual"),
          triggeredBy: actor.userId,
          apiKeyId: actor.apiKeyId,
          gitBranch: opts.git?.branch ?? null,
          gitCommit: opts.git?.commit ?? null,
          gitMessage: opts.git?.message ?? null,
          imageTag: opts.imageTag ?? null,
          rollbackFromId: opts.rollbackFromId ?? null,
          totalSteps: stepsForKind(kind).length,
          idempotencyScope: actor.idempotency?.scope ?? null,
          idempotencyKey: actor.idempotency?.key ?? null,
          createdAt: now,
        },
        (env) => !required || env.status === required.status,
        (env) => ({
          gitBranch: opts.git?.branch ?? (deploys ? env.gitBranch : null),
          // A deployment records the configuration it ran with: retry and rollback reuse it.
          extraData: deploys ? { config: configOf(env), ...opts.extraData } : (opts.extraData ?? {}),
        }),
        // A retry of a request whose operation was made but whose answer was lost (the replica
        // died, or PostgreSQL restarted, before the idempotency record was kept) gets that
        // operation back, for as long as the key would have been replayed.
        new Date(now.getTime() - IDEMPOTENCY_TTL_MS),
      );
      switch (outcome.kind) {
        case "not_found":
          throw notFound("Environment");
        case "busy":
          if (opts.force && !opts.forced) {
            await deps.deployments.cancel(outcome.active.id, deps.clock.now(), "a forced redeploy");
            return this.requestOperation(scope, environmentId, kind, actor, { ...opts, forced: true });
          }
          throw new DomainError("task_in_progress", opts.busyMessage ?? `Task ${outcome.active.id} is already queued or running on this environment`);
        case "refused":
          throw new DomainError(required!.code, `${required!.message} (status: ${outcome.environment.status})`);
        case "existing":
          // Its dispatch may have been cut short too; a second dispatch of one operation is a no-op.
          await deps.dispatcher.dispatch(outcome.row, issuerOf(actor)).catch(() => {});
          return outcome.row;
        case "created": {
          // The environment's first deploy makes its ERP master password, shown once in this
          // answer (the dispatcher would otherwise make it, unseen, e.g. for a push-triggered deploy).
          // One that exists but does not open is not shown either: the dispatch fails the task saying why.
          const password = deploys ? await deps.credentials.ensure(environmentId).catch(() => null) : null;
          const login = deploys ? await deps.credentials.ensureLogin(environmentId).catch(() => null) : null;
          // The row is the record; a command that cannot be built fails it (the dispatcher), and
          // a dispatch cut short otherwise (the database, say) is repaired by the sweep.
          await deps.dispatcher.dispatch(outcome.row, issuerOf(actor)).catch(() => {});
          return {
            ...outcome.row,
            ...(password?.created ? { adminPassword: password.password } : {}),
            ...(login?.created ? { adminLoginPassword: login.password } : {}),
          };
        }
      }
    },

    /** `options`: a deploy's or redeploy's modules and init, kept in its extra_data. */
    requestAction(scope: Scope, environmentId: string, action: Action, actor: Actor, options?: DeployOptions) {
      const required = REQUIRED_STATUS[action];
      const extra = action === "deploy" || action === "redeploy" ? deployOptionsExtra(options) : {};
      return this.requestOperation(scope, environmentId, action, actor, { ...(required ? { required } : {}), extraData: extra });
    },

    /** Removes the environment's containers, database and network; with deleteData also its files. */
    destroy(scope: Scope, environmentId: string, deleteData: boolean, actor: Actor) {
      return this.requestOperation(scope, environmentId, "destroy", actor, { extraData: { delete_data: deleteData } });
    },

    /**
     * Cancels a task that has not finished. Not yet delivered: it never will be. Running:
     * the agent is told, and stops at its next step boundary.
     */
    async cancel(scope: Scope, id: string, actor: Actor) {
      const row = await deps.deployments.get(scope, id);
      if (!row) throw notFound("Task");
      const by = issuerOf(actor);
      const cancelled = await deps.deployments.cancel(row.id, deps.clock.now(), by);
      if (!cancelled) throw new DomainError("task_not_cancellable", `Cannot cancel deployment in ${row.status} state`);
      return taskView(cancelled);
    },

    async getTask(scope: Scope, id: string) {
      const row = await deps.deployments.getTask(scope, id);
      if (!row) throw notFound("Task");
      return taskView(row);
    },

    /** A page of the task's log lines, oldest first; the cursor is the last line's id (opaque to clients). */
    async logs(scope: Scope, id: string, page: PageRequest) {
      const row = await deps.deployments.get(scope, id);
      if (!row) throw notFound("Task");
      if (page.cursor !== undefined && !/^\d{1,18}$/.test(page.cursor)) {
        throw new DomainError("invalid_cursor", "The cursor is not valid for this list; use pagination.next_cursor from a previous page");
      }
      const { rows, total } = await deps.deployments.logsAfter(row.id, page.cursor ?? null, page.limit);
      const hasMore = rows.length > page.limit;
      const items = hasMore ? rows.slice(0, page.limit) : rows;
      return { data: items.map(logEntry), pagination: { has_more: hasMore, next_cursor: hasMore ? String(items[items.length - 1]!.id) : null, total } };
    },

    async history(scope: Scope, environmentId: string, page: PageRequest) {
      const env = await deps.environments.get(scope, environmentId);
      if (!env) throw notFound("Environment");
      return listPage(deps.cursors, `deployments:${environmentId}`, page, (limit, after) => deps.deployments.listForEnvironment(env.id, [...HISTORY_KINDS], limit, after), taskView);
    },
  };
}
export type DeploymentsService = ReturnType<typeof createDeploymentsService>;
