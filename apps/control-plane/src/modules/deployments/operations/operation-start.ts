// Starting an operation on an environment, whichever API asks: one active operation per
// environment, the environment status it may need, the configuration it runs with, and
// its dispatch to the agent (public spec 3.2, 4.1; platform spec 3.1).
import { stepsForKind, type OperationKind } from "@berth/protocol";
import { isDeployKind } from "./deployment-state.ts";
import type { Clock } from "../../../lib/clock.ts";
import { DomainError, notFound, type ErrorCode } from "../../../lib/errors.ts";
import type { Scope } from "../../../lib/scope.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { DeploymentRow, DeploymentsRepo } from "./operations.repo.ts";
import type { EnvironmentRow } from "../../environments/environments.repo.ts";
import type { Dispatcher } from "../dispatch/dispatcher.ts";
import { sealedSnapshot } from "../../environments/variables.ts";
import type { ErpCredentials } from "../../environments/erp-credentials.ts";
import { IDEMPOTENCY_TTL_MS, type IdempotencyClaim } from "../../idempotency/idempotency.ts";

export interface Requirement {
  status: string;
  code: ErrorCode;
  message: string;
}

/** Who asked: a user (platform API) or an API key (public API), and the request's idempotency key if it sent one. */
export interface Actor {
  userId: string | null;
  apiKeyId: string | null;
  idempotency?: IdempotencyClaim | null;
}

/** How an actor is named on what it issued (a command's issued_by, a cancel's by). */
export const issuerOf = (actor: Actor) => (actor.userId ? `user:${actor.userId}` : `api_key:${actor.apiKeyId}`);

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

/** Where an operation runs: an organisation and, for a platform record, its project. */
export type OperationScope = { organizationId: string; projectId: string };

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

export const inProgress = () => new DomainError("deployment_in_progress", "Deployment already in progress");

export interface OperationStartDeps {
  deployments: Pick<DeploymentsRepo, "createOperation" | "cancel">;
  clock: Clock;
  dispatcher: Pick<Dispatcher, "dispatch">;
  credentials: Pick<ErpCredentials, "ensure" | "ensureLogin">;
}

export type OperationStart = ReturnType<typeof createOperationStart>;

export function createOperationStart(deps: OperationStartDeps) {
  /** Any operation on an environment: one active at a time, then dispatched to the agent. */
  async function requestOperation(scope: Scope, environmentId: string, kind: OperationKind, actor: Actor, opts: OperationOptions = {}): Promise<RequestedOperation> {
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
          return requestOperation(scope, environmentId, kind, actor, { ...opts, forced: true });
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
  }

  /**
   * An operation a signed-in person starts (platform API): a platform record (pending), and
   * the shared 409 becomes the platform's "Deployment already in progress".
   */
  async function operate(scope: OperationScope, environmentId: string, kind: OperationKind, person: SessionPrincipal, opts: OperationOptions) {
    try {
      return await requestOperation(scope, environmentId, kind, { userId: person.userId, apiKeyId: null }, { initialStatus: "pending", ...opts });
    } catch (err) {
      if (err instanceof DomainError && err.code === "task_in_progress") throw inProgress();
      throw err;
    }
  }

  return { requestOperation, operate };
}
