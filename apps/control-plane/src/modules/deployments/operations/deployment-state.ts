// The one state machine of an operation (a `deployments` row: deploy, redeploy, rollback,
// restart, start, stop, destroy, backup, restore): its statuses, which of them are active,
// the operation kinds and what each does to its environment, the allowed transitions, and
// the projection into the public API's task statuses. The dispatcher, the event applier
// (deployment-events.ts), the stuck sweep, the repos, the support console and webhook
// deliveries read these names from here; SQL gets the lists as parameters.
//
// Every insert and every change of status or step emits a `deployment.status` live event,
// and every change of an environment's status an `environment.status` event: the SQL
// triggers deployments_inserted_event / deployments_changed_event (function
// berth_deployment_event) and environments_status_event (berth_environment_event), in
// packages/db/migrations/0005_platform_api.sql. Their shape is written down as
// DeploymentStatusEvent below and in GET /api/v1/events' description.
import { OPERATION_KINDS, type OperationKind } from "@berth/protocol";

export { OPERATION_KINDS, type OperationKind };

export const DEPLOYMENT_STATUSES = [
  "pending",
  "queued",
  "building",
  "deploying",
  "running",
  "success",
  "failed",
  "cancelled",
  "rolled_back",
  "destroyed",
] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** Not yet taken up by the agent: a platform request starts pending, a public API one queued. */
export const WAITING_STATUSES = ["pending", "queued"] as const satisfies readonly DeploymentStatus[];
/** Statuses of an operation that still holds its environment: at most one per environment. */
export const ACTIVE_STATUSES = [...WAITING_STATUSES, "building", "deploying", "running"] as const satisfies readonly DeploymentStatus[];

/** Operations that (re)build the application: they record the configuration they ran with, and can be rolled back to. */
export const DEPLOY_KINDS = ["deploy", "redeploy", "rollback"] as const satisfies readonly OperationKind[];
/** Operations whose successful runs are the deployment history (versions). */
export const HISTORY_KINDS = ["deploy", "redeploy"] as const satisfies readonly OperationKind[];

export const isActive = (status: string) => (ACTIVE_STATUSES as readonly string[]).includes(status);
export const isDeployKind = (kind: string) => (DEPLOY_KINDS as readonly string[]).includes(kind);

/**
 * Every status change the control plane makes. A new operation is pending or queued; the
 * agent's first step moves it to deploying (deploy kinds) or running (the others); its
 * result ends it; an undelivered or stuck one fails; a cancel ends any active one; a
 * successful rollback marks the deployment it replaced rolled_back.
 */
const TRANSITIONS: Record<DeploymentStatus, readonly DeploymentStatus[]> = {
  pending: ["deploying", "running", "success", "destroyed", "failed", "cancelled"],
  queued: ["deploying", "running", "success", "destroyed", "failed", "cancelled"],
  building: ["success", "destroyed", "failed", "cancelled"],
  deploying: ["success", "destroyed", "failed", "cancelled"],
  running: ["success", "destroyed", "failed", "cancelled"],
  success: ["rolled_back"],
  failed: [],
  cancelled: [],
  rolled_back: [],
  destroyed: [],
};

export function canTransition(from: string, to: string): boolean {
  return (TRANSITIONS[from as DeploymentStatus] ?? []).includes(to as DeploymentStatus);
}

/** The status an operation takes when the agent starts its first step. */
export function startedStatus(kind: string): "deploying" | "running" {
  return isDeployKind(kind) ? "deploying" : "running";
}

/** The status the agent's result gives an operation. */
export function resultStatus(kind: string, result: { ok: boolean; errorCode?: string | undefined }): "success" | "destroyed" | "cancelled" | "failed" {
  if (result.ok) return kind === "destroy" ? "destroyed" : "success";
  return result.errorCode === "cancelled" ? "cancelled" : "failed";
}

/** The environment's status once an operation of this kind succeeded (destroy: see environmentAfterDestroy). */
export const ENVIRONMENT_STATUS_AFTER_SUCCESS: Partial<Record<OperationKind, "running" | "stopped">> = {
  deploy: "running",
  redeploy: "running",
  rollback: "running",
  restart: "running",
  start: "running",
  stop: "stopped",
  restore: "running",
};

export const TASK_STATUSES = ["pending", "queued", "running", "completed", "failed", "cancelled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

const TO_TASK: Record<DeploymentStatus, TaskStatus> = {
  pending: "pending",
  queued: "queued",
  building: "running",
  deploying: "running",
  running: "running",
  success: "completed",
  failed: "failed",
  cancelled: "cancelled",
  rolled_back: "completed",
  destroyed: "completed",
};

/** The public API's task status of a stored status (public spec 2.4). */
export function toTaskStatus(status: string): TaskStatus {
  const mapped = TO_TASK[status as DeploymentStatus];
  if (!mapped) throw new Error(`unknown deployment status ${status}`);
  return mapped;
}

export const isTerminal = (status: string) => ["completed", "failed", "cancelled"].includes(toTaskStatus(status));

/** The `data` of a `deployment.status` live event, as berth_deployment_event() builds it. */
export interface DeploymentStatusEvent {
  deployment_id: string;
  project_id: string;
  environment_id: string;
  kind: OperationKind;
  version: number;
  trigger: string;
  status: DeploymentStatus;
  previous_status: DeploymentStatus | null;
  progress_percent: number;
  current_step: string | null;
  error_message: string | null;
  timestamp: string;
}
