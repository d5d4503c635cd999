// Step ids of a deployment (platform spec 2.2), in the order they run, and the steps
// each operation kind walks through. Both apps read progress from these lists.
import { LiteralUnion } from "./fields.ts";

export const DEPLOY_STEP_IDS = [
  "initializing",
  "connecting",
  "creating_network",
  "configuring_dns",
  "creating_postgres",
  "cloning_platform_repos",
  "cloning_org_repos",
  "cloning_repo",
  "pulling_image",
  "generating_config",
  "starting_container",
  "installing_dependencies",
  "initializing_database",
  "verifying_dns",
  "configuring_traefik",
  "health_check",
  "completed",
] as const;

export type StepId = (typeof DEPLOY_STEP_IDS)[number];
/** Runtime check for a step id carried in an event. */
export const StepId = LiteralUnion(DEPLOY_STEP_IDS);

export const STEP_NAMES: Record<StepId, string> = {
  initializing: "Initializing",
  connecting: "Connecting to server",
  creating_network: "Creating network",
  configuring_dns: "Configuring DNS",
  creating_postgres: "Creating database",
  cloning_platform_repos: "Cloning platform repositories",
  cloning_org_repos: "Cloning organisation repositories",
  cloning_repo: "Cloning repository",
  pulling_image: "Pulling image",
  generating_config: "Generating configuration",
  starting_container: "Starting container",
  installing_dependencies: "Installing dependencies",
  initializing_database: "Initializing database",
  verifying_dns: "Verifying DNS",
  configuring_traefik: "Configuring routing",
  health_check: "Health check",
  completed: "Completed",
};

/** Every operation recorded as a row of `deployments`. */
export const OPERATION_KINDS = [
  "deploy",
  "redeploy",
  "rollback",
  "restart",
  "start",
  "stop",
  "destroy",
  "backup",
  "restore",
  "copy",
] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

const LIFECYCLE_STEPS: Record<Exclude<OperationKind, "deploy" | "redeploy" | "rollback">, readonly StepId[]> = {
  restart: ["initializing", "connecting", "starting_container", "health_check", "completed"],
  start: ["initializing", "connecting", "starting_container", "health_check", "completed"],
  stop: ["initializing", "connecting", "completed"],
  destroy: ["initializing", "connecting", "completed"],
  backup: ["initializing", "connecting", "completed"],
  restore: ["initializing", "connecting", "initializing_database", "starting_container", "health_check", "completed"],
  // A copy of another environment (copy-from) is a restore whose data comes from that environment.
  copy: ["initializing", "connecting", "initializing_database", "starting_container", "health_check", "completed"],
};

/** The ordered step ids an operation of this kind reports. */
export function stepsForKind(kind: OperationKind): readonly StepId[] {
  if (kind === "deploy" || kind === "redeploy" || kind === "rollback") return DEPLOY_STEP_IDS;
  return LIFECYCLE_STEPS[kind];
}

/**
 * A deploy that restores a migration's backup (DeployParams.archive) reports, inside step
 * starting_container, each phase of the restore as it begins: a log line whose
 * data.migration_step is one of these (data.skipped true for a phase with nothing to do,
 * e.g. a backup without a file store). The control plane maps them onto the 12 steps of a
 * migration (platform spec 4.3).
 */
export const MIGRATION_RESTORE_PHASES = ["downloading_backup", "extracting_backup", "restoring_database", "restoring_filestore", "restarting_container"] as const;
export type MigrationRestorePhase = (typeof MIGRATION_RESTORE_PHASES)[number];
