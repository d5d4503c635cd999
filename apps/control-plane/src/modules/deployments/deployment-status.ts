// The one stored status of an operation (platform vocabulary) and its projection into the
// public API's task vocabulary. One function, tested as a table.

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

export function toTaskStatus(status: string): TaskStatus {
  const mapped = TO_TASK[status as DeploymentStatus];
  if (!mapped) throw new Error(`unknown deployment status ${status}`);
  return mapped;
}

export const isTerminal = (status: string) => ["completed", "failed", "cancelled"].includes(toTaskStatus(status));
