// Folds the agent's events of a migration's deployment (steps 3 to 12) into the migration,
// inside the ingest transaction, after applyDeploymentEvents has finished the deployment:
// its steps, percent and current step move (record/migration-steps.ts), and its end (the deploy's
// command.result) completes or fails it, each change followed by its migration_progress
// event. Events of deployments that run no migration cost one indexed lookup per batch.
import type pg from "pg";
import { MIGRATION_RESTORE_PHASES, type CommandResultEvent, type Event, type MigrationRestorePhase } from "@berth/protocol";
import type { EventApplier } from "../../agents/event-ingest.ts";
import { appendOrgEvents, type OrgEvent } from "../../events/event-log.repo.ts";
import { deploymentsOfCommands, lockRunningByDeployments, storeProgress, type RunningMigration } from "./execution.repo.ts";
import { advance, currentStep, MIGRATION_STEPS, percentOf, stepsOfMigration, type StepSignal } from "../record/migration-steps.ts";

type Signal = StepSignal | { kind: "result"; ok: boolean; message: string | null; healthy: boolean };

const isPhase = (v: unknown): v is MigrationRestorePhase => typeof v === "string" && (MIGRATION_RESTORE_PHASES as readonly string[]).includes(v);

/** The signals of each deployment in the events, in their order; command results named by command id until resolved. */
function signalsOf(fresh: Event[]) {
  const byDeployment = new Map<string, Signal[]>();
  const results: { commandId: string; signal: Signal }[] = [];
  const push = (deploymentId: string, s: Signal) => signalsFor(byDeployment, deploymentId).push(s);
  for (const e of fresh) {
    if ((e.kind === "step.started" || e.kind === "step.finished") && e.deployment_id) {
      push(e.deployment_id, { kind: "deploy_step", step: e.step, phase: e.kind === "step.started" ? "started" : "finished" });
    } else if (e.kind === "log" && e.deployment_id && isPhase(e.data?.migration_step)) {
      push(e.deployment_id, { kind: "restore_phase", phase: e.data.migration_step, skipped: e.data.skipped === true });
    } else if (e.kind === "command.result") {
      results.push({ commandId: e.command_id, signal: resultSignal(e) });
    }
  }
  return { byDeployment, results };
}

function signalsFor(byDeployment: Map<string, Signal[]>, deploymentId: string): Signal[] {
  let list = byDeployment.get(deploymentId);
  if (!list) byDeployment.set(deploymentId, (list = []));
  return list;
}

function resultSignal(r: CommandResultEvent): Signal {
  const healthy = (r.result as { healthy?: unknown } | undefined)?.healthy;
  return { kind: "result", ok: r.ok, message: r.error?.message ?? null, healthy: healthy !== false };
}

export const applyMigrationProgress: EventApplier = async (client, serverId, fresh) => {
  const { byDeployment, results } = signalsOf(fresh);
  if (results.length > 0) {
    const deploymentOf = await deploymentsOfCommands(client, serverId, results.map((r) => r.commandId));
    // A result is a batch's last word on its deployment: it goes after that deployment's other events.
    for (const r of results) {
      const d = deploymentOf.get(r.commandId);
      if (d) signalsFor(byDeployment, d).push(r.signal);
    }
  }
  if (byDeployment.size === 0) return 0;
  const rows = await lockRunningByDeployments(client, serverId, [...byDeployment.keys()]);
  const events: OrgEvent[] = [];
  for (const m of rows) events.push(...(await applyTo(client, m, byDeployment.get(m.deployment_id) ?? [])));
  await appendOrgEvents(client, events);
  return 0;
};

/** Applies a deployment's signals to its migration; one migration_progress event per change a person would see. */
async function applyTo(client: pg.PoolClient, m: RunningMigration, signals: Signal[]): Promise<OrgEvent[]> {
  let steps = stepsOfMigration({ steps: m.steps, gitRepoUrl: m.git_repo_url });
  let current: string | null = m.current_step;
  let status = "processing";
  let error: string | null = null;
  const events: OrgEvent[] = [];
  let last = { percent: percentOf(steps), current, status };
  for (const signal of signals) {
    if (signal.kind !== "result") {
      steps = advance(steps, signal);
      current = currentStep(steps, signal, current);
    } else if (signal.ok && signal.healthy) {
      steps = advance(steps, { kind: "succeeded" });
      status = "completed";
      current = "completed";
    } else {
      steps = advance(steps, { kind: "failed" });
      if (!signal.ok) error = `${nameOf(current)} failed: ${signal.message ?? "the server gave no reason"}`;
      else {
        // Restored and started, but not answering: the data is in place, a retry redeploys without restoring again.
        steps = { ...steps, verifying_health: "failed", completed: "pending" };
        error = "Verifying deployment health failed: the ERP did not answer its health check on the restored database (see the deployment's logs)";
      }
      status = "failed";
    }
    const now = { percent: percentOf(steps), current, status };
    if (now.percent !== last.percent || now.current !== last.current || now.status !== last.status) {
      events.push({
        organizationId: m.organization_id,
        type: "migration_progress",
        data: { migration_id: m.id, status, progress_percent: now.percent, current_step: current, error_message: error },
      });
      last = now;
    }
    if (status !== "processing") break;
  }
  await storeProgress(client, m.id, { steps, currentStep: current, percent: percentOf(steps), status, errorMessage: error });
  return events;
}

function nameOf(step: string | null): string {
  return MIGRATION_STEPS.find((s) => s.id === step)?.name ?? "The migration";
}
