// The 12 steps of a migration's execution (platform spec 4.3) and how they follow what runs
// them. Steps 1 and 2 are the control plane's (project, environment); steps 3 to 12 are the
// environment's first deployment, which restores the backup (the restore-once rule): its
// deploy steps and, inside starting_container, the restore phases the agent reports
// (MIGRATION_RESTORE_PHASES) move the steps here. The deployment's own order differs from
// the table's (the repository is cloned before the backup is fetched, routing comes after
// the ERP started on the restored database), so a step's percent counts only once every
// step before it in the table is done: the progress bar never moves backwards or jumps.
import { DEPLOY_STEP_IDS, MIGRATION_RESTORE_PHASES, type MigrationRestorePhase, type StepId } from "@berth/protocol";

export const MIGRATION_STEPS = [
  { id: "creating_project", name: "Creating project", percent: 5 },
  { id: "creating_environment", name: "Creating environment", percent: 10 },
  { id: "deploying_containers", name: "Deploying containers", percent: 20 },
  { id: "downloading_backup", name: "Downloading backup from cloud", percent: 30 },
  { id: "extracting_backup", name: "Extracting backup archive", percent: 40 },
  { id: "restoring_database", name: "Restoring database", percent: 55 },
  { id: "restoring_filestore", name: "Restoring filestore", percent: 65 },
  { id: "cloning_repository", name: "Cloning Git repository", percent: 70 },
  { id: "configuring_routing", name: "Configuring routing", percent: 80 },
  { id: "restarting_container", name: "Restarting container", percent: 85 },
  { id: "verifying_health", name: "Verifying deployment health", percent: 95 },
  { id: "completed", name: "Migration complete", percent: 100 },
] as const;

export type MigrationStepId = (typeof MIGRATION_STEPS)[number]["id"];
export type MigrationStepStatus = "pending" | "running" | "completed" | "skipped" | "failed";
export type StepStates = Record<MigrationStepId, MigrationStepStatus>;

/** What moves the steps. */
export type StepSignal =
  | { kind: "started"; step: MigrationStepId }
  | { kind: "done"; step: MigrationStepId }
  | { kind: "deploy_step"; step: StepId; phase: "started" | "finished" }
  | { kind: "restore_phase"; phase: MigrationRestorePhase; skipped: boolean }
  | { kind: "succeeded" }
  | { kind: "failed" };

const DONE: readonly MigrationStepStatus[] = ["completed", "skipped"];

/** All pending; the repository step skipped when there is no repository to clone. */
export function initialSteps(opts: { gitRepository: boolean }): StepStates {
  const s = Object.fromEntries(MIGRATION_STEPS.map((st) => [st.id, "pending"])) as StepStates;
  if (!opts.gitRepository) s.cloning_repository = "skipped";
  return s;
}

/** The stored steps, read defensively (a row written by an older version may lack some). */
function stepsOf(value: unknown, opts: { gitRepository: boolean }): StepStates {
  const s = initialSteps(opts);
  if (value && typeof value === "object") {
    for (const st of MIGRATION_STEPS) {
      const v = (value as Record<string, unknown>)[st.id];
      if (v === "pending" || v === "running" || v === "completed" || v === "skipped" || v === "failed") s[st.id] = v;
    }
  }
  return s;
}

/** A migration's stored steps (its repository decides whether step 8 is skipped). */
export function stepsOfMigration(m: { steps: unknown; gitRepoUrl: string | null }): StepStates {
  return stepsOf(m.steps, { gitRepository: m.gitRepoUrl !== null });
}

/** The deploy steps that are step 3: everything before the ERP starts, but the repository's clone (step 8). */
const DEPLOYING: readonly StepId[] = DEPLOY_STEP_IDS.slice(0, DEPLOY_STEP_IDS.indexOf("starting_container")).filter((id) => id !== "cloning_repo");

function run(s: StepStates, id: MigrationStepId) {
  if (s[id] === "pending") s[id] = "running";
}
function finish(s: StepStates, id: MigrationStepId) {
  if (s[id] === "pending" || s[id] === "running") s[id] = "completed";
}

/** The steps after `signal` (a new object). */
export function advance(before: StepStates, signal: StepSignal): StepStates {
  const s = { ...before };
  switch (signal.kind) {
    case "started":
      run(s, signal.step);
      break;
    case "done":
      finish(s, signal.step);
      break;
    case "deploy_step": {
      const step = signal.step;
      if (step === "cloning_repo") {
        if (signal.phase === "started") run(s, "cloning_repository");
        else finish(s, "cloning_repository");
      } else if (signal.phase === "finished") {
        if (step === "health_check") finish(s, "verifying_health");
      } else if (DEPLOYING.includes(step)) {
        run(s, "deploying_containers");
      } else if (step === "starting_container") {
        finish(s, "deploying_containers");
      } else if (step === "verifying_dns" || step === "configuring_traefik") {
        for (const p of MIGRATION_RESTORE_PHASES) finish(s, p);
        run(s, "configuring_routing");
      } else if (step === "health_check") {
        for (const p of MIGRATION_RESTORE_PHASES) finish(s, p);
        finish(s, "configuring_routing");
        run(s, "verifying_health");
      }
      break;
    }
    case "restore_phase": {
      finish(s, "deploying_containers");
      for (const p of MIGRATION_RESTORE_PHASES) {
        if (p === signal.phase) break;
        finish(s, p);
      }
      if (signal.skipped) {
        if (s[signal.phase] !== "completed") s[signal.phase] = "skipped";
      } else run(s, signal.phase);
      break;
    }
    case "succeeded":
      for (const st of MIGRATION_STEPS) finish(s, st.id);
      break;
    case "failed":
      for (const st of MIGRATION_STEPS) if (s[st.id] === "running") s[st.id] = "failed";
      break;
  }
  return s;
}

/** The percent of the last step of the table's unbroken run of done steps (0 before any). */
export function percentOf(s: StepStates): number {
  let percent = 0;
  for (const st of MIGRATION_STEPS) {
    if (!DONE.includes(s[st.id])) break;
    percent = st.percent;
  }
  return percent;
}

/**
 * current_step after `signal`: the step it started, else the one before it while that still
 * runs, else the last running one in the table's order; null when none runs.
 */
export function currentStep(after: StepStates, signal: StepSignal, previous: string | null): MigrationStepId | null {
  const started =
    signal.kind === "started" ? signal.step
    : signal.kind === "restore_phase" ? signal.phase
    : signal.kind === "deploy_step" && signal.step === "cloning_repo" ? "cloning_repository"
    : null;
  if (started !== null && after[started] === "running") return started;
  if (previous !== null && (after as Record<string, MigrationStepStatus>)[previous] === "running") return previous as MigrationStepId;
  return MIGRATION_STEPS.filter((st) => after[st.id] === "running").at(-1)?.id ?? null;
}

/** The steps as the API shows them. */
export function stepsView(s: StepStates) {
  return MIGRATION_STEPS.map((st) => ({ id: st.id, name: st.name, percent: st.percent, status: s[st.id] }));
}
