// The platform API's projection of an operation row (platform spec 2.1 and 2.3): the
// deployment record, its log entries and its step progress.
import { stepsForKind, STEP_NAMES, type LogLevel, type OperationKind, type StepId } from "@berth/protocol";
import type { DeploymentLogRow, DeploymentRow } from "./operations.repo.ts";
import { extraDataView } from "../../environments/variables.ts";
import { modulesView } from "./deploy-options.ts";
import { testsView } from "./tests-result.ts";
import type { DeploymentStatus } from "./deployment-state.ts";

export function deploymentRecord(d: DeploymentRow) {
  const end = d.completedAt ?? null;
  return {
    id: d.id,
    organization_id: d.organizationId,
    project_id: d.projectId,
    environment_id: d.environmentId,
    vm_id: d.serverId,
    kind: d.kind,
    version: d.version,
    status: d.status as DeploymentStatus,
    trigger: d.trigger,
    triggered_by: d.triggeredBy,
    git_branch: d.gitBranch,
    git_commit: d.gitCommit,
    git_message: d.gitMessage,
    rollback_from_id: d.rollbackFromId,
    extra_data: extraDataView(d.extraData),
    container_id: d.containerId,
    image_tag: d.imageTag,
    created_at: d.createdAt.toISOString(),
    started_at: d.startedAt?.toISOString() ?? null,
    completed_at: end?.toISOString() ?? null,
    duration_seconds: d.startedAt && end ? Math.max(0, (end.getTime() - d.startedAt.getTime()) / 1000) : null,
    error_message: d.errorMessage,
    modules: modulesView(d.modulesResult),
    tests: testsView(d.testsResult),
    // Only on the answer of the deploy that generated the environment's passwords.
    ...("adminPassword" in d && typeof d.adminPassword === "string" ? { admin_password: d.adminPassword } : {}),
    ...("adminLoginPassword" in d && typeof d.adminLoginPassword === "string" ? { admin_login_password: d.adminLoginPassword } : {}),
  };
}

export type LogRow = DeploymentLogRow;

export function logEntry(l: LogRow) {
  return { id: String(l.id), deployment_id: l.deployment_id, timestamp: new Date(l.ts).toISOString(), level: l.level as LogLevel, message: l.message, step: l.step, data: l.data ?? {} };
}

const FINISHED_OK = ["success", "rolled_back", "destroyed"];

/**
 * Steps of the operation with their state: before the current step completed, the current
 * one running (failed when the operation failed or was cancelled there), the rest pending.
 */
export function progressView(d: DeploymentRow, logsByStep: Map<string, { message: string; timestamp: string }[]>) {
  const steps = stepsForKind(d.kind as OperationKind) as readonly StepId[];
  const done = FINISHED_OK.includes(d.status);
  const stopped = d.status === "failed" || d.status === "cancelled";
  const current = d.currentStep ? steps.indexOf(d.currentStep as StepId) : -1;
  return {
    deployment_id: d.id,
    status: d.status,
    progress_percent: done ? 100 : d.progressPercent,
    current_step: d.currentStep ?? (done ? "completed" : (steps[0] ?? "initializing")),
    started_at: d.startedAt?.toISOString() ?? null,
    error_message: d.errorMessage,
    steps: steps.map((id, i) => {
      const status: "completed" | "failed" | "running" | "pending" = done || i < current ? "completed" : i === current ? (stopped ? "failed" : "running") : "pending";
      const logs = logsByStep.get(id);
      return { id, name: STEP_NAMES[id], status, ...(logs && logs.length > 0 ? { logs } : {}) };
    }),
  };
}
