// The public API's task projection of an operation row (public spec 2.4).
import { STEP_NAMES, type StepId } from "@berth/protocol";
import { toTaskStatus } from "./deployment-state.ts";
import type { TaskRow } from "./operations.repo.ts";
import { modulesView } from "./deploy-options.ts";
import { testsView } from "./tests-result.ts";

export function taskView(d: TaskRow) {
  const durationSeconds =
    d.startedAt && d.completedAt ? Math.max(0, Math.round((d.completedAt.getTime() - d.startedAt.getTime()) / 1000)) : null;
  return {
    id: d.id,
    type: d.kind,
    status: toTaskStatus(d.status),
    environment_id: d.environmentId,
    progress_percent: d.progressPercent,
    current_step: d.currentStep ? (STEP_NAMES[d.currentStep as StepId] ?? d.currentStep) : null,
    steps_completed: d.stepsCompleted,
    total_steps: d.totalSteps,
    started_at: d.startedAt?.toISOString() ?? null,
    completed_at: d.completedAt?.toISOString() ?? null,
    duration_seconds: durationSeconds,
    error_message: d.errorMessage,
    triggered_by: d.triggeredBy,
    created_at: d.createdAt.toISOString(),
    modules: modulesView(d.modulesResult),
    tests: testsView(d.testsResult),
  };
}
