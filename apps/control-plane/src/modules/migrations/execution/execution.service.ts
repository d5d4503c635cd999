// start and unlink-environment of a migration (platform spec 4.3): the 12 steps. Steps 1 and
// 2 are done here (a project named after the migration, on the target server, with the
// detected ERP version and the repository; an environment linked by migration_id, sized by
// the analysis' recommendation, at the target domain); steps 3 to 12 are that environment's
// first deployment, trigger "migration", which restores the backup because the environment
// has a migration_id and no completed restore (the restore-once rule: dispatcher.ts adds the
// `archive`, the agent's deploy restores it, migration-progress.ts follows it).
//
// Why a deployment and not a command of its own: the deploy already creates the database,
// clones, pulls, configures, routes and checks health, and keeps safe what a failed deploy
// touched; a migration adds only the restore. The same path then serves force_restore
// (4.1 rule 9) and a retry: one mechanism, the restore-once flag deciding.
//
// Before step 1, start refuses (409, nothing made) while the target lacks what the backup
// needs (findings/migration-requirements.ts): the Enterprise add-ons for Enterprise modules, a
// database image whose PostgreSQL is at least as new as the dump.
//
// The reconcile job ends as its deployment did a running migration whose deployment ended
// without the end reaching it (execution.repo.ts stalled).
import { randomUUID } from "node:crypto";
import { DomainError } from "../../../lib/errors.ts";
import type { Clock } from "../../../lib/clock.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import type { DeploymentsService } from "../../deployments/operations/operations.service.ts";
import type { EnvironmentsRepo } from "../../environments/environments.repo.ts";
import type { EnvironmentsService } from "../../environments/environments.service.ts";
import type { ProjectsRepo } from "../../projects/projects.repo.ts";
import type { ProjectsService } from "../../projects/projects.service.ts";
import { assertSupportedErpVersion } from "../../projects/erp-versions.ts";
import type { MigrationRow, MigrationsRepo } from "../record/migrations.repo.ts";
import type { MigrationRequirements } from "../findings/migration-requirements.ts";
import type { ExecutionRepo } from "./execution.repo.ts";
import type { AnalysisFields } from "../record/migration-schemas.ts";
import { advance, currentStep, initialSteps, MIGRATION_STEPS, percentOf, stepsOfMigration, type MigrationStepId, type StepStates } from "../record/migration-steps.ts";

/** The name of the environment a migration creates. */
export const environmentNameFor = (m: Pick<MigrationRow, "production">) => (m.production ? "production" : "staging");

export function createExecutionService(deps: {
  repo: MigrationsRepo;
  runs: Pick<ExecutionRepo, "stalled">;
  projects: Pick<ProjectsService, "create">;
  projectsRepo: Pick<ProjectsRepo, "get">;
  environments: Pick<EnvironmentsService, "create">;
  environmentsRepo: Pick<EnvironmentsRepo, "get">;
  operations: Pick<DeploymentsService, "operate">;
  requirements: Pick<MigrationRequirements, "assertMet">;
  clock: Clock;
}) {
  const { repo } = deps;

  async function get(organizationId: string, id: string): Promise<MigrationRow> {
    const m = await repo.get(organizationId, id);
    if (!m) throw new DomainError("not_found", "Migration not found");
    return m;
  }

  /** Moves one of the control plane's steps (started or done) and records it with its event. */
  async function step(m: MigrationRow, signal: { kind: "started" | "done"; step: MigrationStepId }, patch: Partial<MigrationRow> = {}): Promise<MigrationRow> {
    const steps: StepStates = advance(stepsOfMigration(m), signal);
    const row = await repo.update(
      m.id,
      { ...patch, steps, progressPercent: percentOf(steps), currentStep: currentStep(steps, signal, m.currentStep) },
      { from: ["processing"] },
    );
    if (!row) throw new DomainError("migration_not_ready", `Migration ${m.id} was cancelled while it started`);
    return row;
  }

  return {
    /** Steps 1 and 2, then the deployment that runs 3 to 12; a retried migration reuses the project and environment it made. */
    async start(organizationId: string, id: string, person: SessionPrincipal) {
      const m0 = await get(organizationId, id);
      if (m0.status !== "ready" || m0.targetServerId === null || m0.erpVersionDetected === null) {
        throw new DomainError("migration_not_ready", `Migration ${id} is ${m0.status}: configure it (target server) after its analysis, then start it`);
      }
      const erpVersion = assertSupportedErpVersion(m0.erpVersionDetected);
      if (m0.analysis !== null) await deps.requirements.assertMet({ organizationId, environmentId: m0.environmentId, analysis: m0.analysis as AnalysisFields });
      const steps = initialSteps({ gitRepository: m0.gitRepoUrl !== null });
      let m = await repo.update(id, { status: "processing", steps, progressPercent: 0, currentStep: null, errorMessage: null, deploymentId: null }, { from: ["ready"] });
      if (!m) throw new DomainError("migration_not_ready", `Migration ${id} changed state; ask again`);
      const scope = { organizationId, projectId: null };
      const server = m0.targetServerId;
      try {
        m = await step(m, { kind: "started", step: "creating_project" });
        let projectId = m.projectId;
        if (projectId === null || !(await deps.projectsRepo.get(scope, projectId))) {
          const project = await deps.projects.create(scope, {
            name: m.projectName,
            server_id: server,
            erp_version: erpVersion,
            ...(m.gitRepoUrl ? { git_repo_url: m.gitRepoUrl, git_repo_credentials_enc: m.gitRepoCredentialsEnc } : {}),
            ...(m.gitBranch ? { default_branch: m.gitBranch } : {}),
          });
          projectId = project.id;
        }
        m = await step(m, { kind: "done", step: "creating_project" }, { projectId });
        m = await step(m, { kind: "started", step: "creating_environment" });
        let environmentId = m.environmentId;
        const existing = environmentId === null ? undefined : await deps.environmentsRepo.get(scope, environmentId);
        if (!existing?.isActive) {
          const env = await deps.environments.create(scope, {
            project_id: projectId,
            name: environmentNameFor(m),
            ...(m.gitBranch ? { git_branch: m.gitBranch } : {}),
            ...(m.targetDomain ? { domain: m.targetDomain } : {}),
            // Quotas from the recommendation: whole cores, at least what the analysis asks.
            cpu_cores: Math.max(1, Math.ceil(m.recommendedCpu ?? 1)),
            ...(m.recommendedRamMb ? { ram_mb: m.recommendedRamMb } : {}),
            ...(m.recommendedDiskGb ? { disk_gb: m.recommendedDiskGb } : {}),
            migration_id: m.id,
          });
          environmentId = env.id;
        }
        m = await step(m, { kind: "done", step: "creating_environment" }, { environmentId });
        // The deployment's id is the migration's before the command can reach the agent, so no event of it goes unseen.
        const deploymentId = randomUUID();
        m = (await repo.update(id, { deploymentId }, { from: ["processing"], event: false })) ?? m;
        await deps.operations.operate({ organizationId, projectId }, environmentId!, "deploy", person, { id: deploymentId, trigger: "migration", extraData: { migration_id: m.id } });
      } catch (error) {
        const running = MIGRATION_STEPS.find((s) => s.id === m!.currentStep)?.name ?? "Starting";
        const message = error instanceof Error ? error.message : String(error);
        const failedSteps = advance(stepsOfMigration(m), { kind: "failed" });
        await repo.update(id, { status: "failed", steps: failedSteps, errorMessage: `${running} failed: ${message}` }, { from: ["processing"] });
        throw error;
      }
      return { status: "processing" as const, migration_id: id, message: "Migration started: the environment's first deployment restores the backup on the target server" };
    },

    /**
     * unlink-environment: the environment the migration created is destroyed with its data
     * (a destroy operation on its server, when it was ever deployed) and forgotten; the
     * migration goes back to analyzed, ready to be configured and started again.
     */
    async unlink(organizationId: string, id: string, person: SessionPrincipal) {
      const m = await get(organizationId, id);
      if (m.status === "processing") throw new DomainError("migration_in_progress", `Migration ${id} is running: cancel it first`);
      if (m.environmentId === null) throw new DomainError("migration_not_linked", `Migration ${m.id} has no linked environment`);
      const scope = { organizationId, projectId: null };
      const env = await deps.environmentsRepo.get(scope, m.environmentId);
      let deleted = false;
      if (env?.isActive) {
        await deps.operations.operate({ organizationId, projectId: env.projectId }, env.id, "destroy", person, { trigger: "destroy", extraData: { delete_data: true }, force: true });
        deleted = true;
      }
      const row = await repo.update(
        id,
        { status: "analyzed", environmentId: null, deploymentId: null, steps: null, progressPercent: 0, currentStep: null, errorMessage: null, targetServerId: null, configuredAt: null },
        { from: [m.status] },
      );
      if (!row) throw new DomainError("migration_in_progress", `Migration ${id} changed state; ask again`);
      return {
        status: "unlinked" as const,
        migration_id: id,
        environment_deleted: deleted,
        message: deleted ? "The migrated environment is being destroyed with its data; the migration can be configured and started again" : "The environment was already gone; the migration can be configured and started again",
      };
    },

    /** The reconcile job: running migrations whose deployment ended unseen end as it did. How many. */
    async reconcile(): Promise<number> {
      let n = 0;
      for (const { m, deploymentStatus, deploymentError } of await deps.runs.stalled()) {
        if (deploymentStatus === "success") {
          const steps = advance(stepsOfMigration(m), { kind: "succeeded" });
          await repo.update(m.id, { status: "completed", steps, progressPercent: 100, currentStep: "completed" }, { from: ["processing"] });
        } else {
          const steps = advance(stepsOfMigration(m), { kind: "failed" });
          const why = deploymentError ?? `the deployment was ${deploymentStatus}`;
          await repo.update(m.id, { status: "failed", steps, errorMessage: `The migration's deployment ended without finishing: ${why}` }, { from: ["processing"] });
        }
        n++;
      }
      return n;
    },
  };
}
export type ExecutionService = ReturnType<typeof createExecutionService>;
