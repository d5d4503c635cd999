// What a signed-in person does to environments through the platform API (platform spec 4.1
// rules 4, 5 and 9): deploy one (skipped when it already runs, unless forced), destroy one,
// redeploy a migrated one with its backup restored again, and change its branch,
// auto-deploy, domain or aliases.
import type { StageSettings } from "../../environments/stage-builds.ts";
import { deployOptionsExtra, type DeployOptions } from "./deploy-options.ts";
import { DomainError } from "../../../lib/errors.ts";
import type { Permission } from "../../auth/permissions.ts";
import type { SessionPrincipal } from "../../auth/sessions.ts";
import { inProgress, type OperationStart } from "./operation-start.ts";
import type { OperationAccess } from "./operation-access.ts";
import type { DeploymentsRepo } from "./operations.repo.ts";
import type { Clock } from "../../../lib/clock.ts";
import type { Access } from "../../auth/access.ts";
import type { CreateEnvironmentInput, EnvironmentSize, EnvironmentsService } from "../../environments/environments.service.ts";
import type { DomainsInput } from "../../environments/domains.ts";

export interface EnvironmentDeploysDeps {
  repo: Pick<DeploymentsRepo, "environment" | "hasActive" | "updateEnvironment">;
  access: Pick<Access, "requireProject">;
  clock: Clock;
  environmentsService: Pick<EnvironmentsService, "update" | "view">;
  /** Whether a migration's backup is still in the backup store (force_restore needs it); absent: assumed so. */
  migrationBackupStored?: ((migrationId: string) => Promise<boolean>) | undefined;
}

export function createEnvironmentDeploys(deps: EnvironmentDeploysDeps & { ops: OperationAccess; start: OperationStart }) {
  const { ops, repo, start } = deps;
  return {
    /** POST /deployments: a deploy of a project's environment on the given branch (and commit). */
    async createDeployment(person: SessionPrincipal, input: { project_id: string; environment_id: string; git_branch: string; git_commit?: string | undefined } & DeployOptions) {
      const { scope, env } = await ops.deployableEnvironment(person, input.project_id, input.environment_id);
      await ops.heavy(scope.organizationId);
      return start.operate(scope, env.id, "deploy", person, { git: { branch: input.git_branch, commit: input.git_commit ?? null }, extraData: deployOptionsExtra(input) });
    },

    /** Rule 5: a destroy operation; an operation in progress is cancelled first. */
    async destroyEnvironment(person: SessionPrincipal, environmentId: string, deleteData: boolean) {
      const { env, scope } = await ops.environmentWithAccess(person, environmentId, "project.environments.deploy");
      await ops.heavy(scope.organizationId);
      const op = await start.operate(scope, env.id, "destroy", person, { trigger: "destroy", extraData: { delete_data: deleteData }, force: true });
      return { op, env };
    },

    /** Rule 4: with force a fresh redeploy even if one is running; without, skipped when it already runs. */
    async deployEnvironment(person: SessionPrincipal, environmentId: string, input: { force: boolean; git_branch?: string | undefined } & DeployOptions) {
      const found = await repo.environment(environmentId);
      if (!found) throw new DomainError("not_found", "Environment not found");
      const { scope, env } = await ops.deployableEnvironment(person, found.projectId, found.id);
      const branchChanged = input.git_branch !== undefined && input.git_branch !== env.gitBranch;
      if (!input.force && env.status === "running" && !branchChanged) {
        if (await repo.hasActive(env.id)) throw inProgress();
        return { skipped: true as const, message: "The environment is already running; deploy with force: true to redeploy it", deployment: null };
      }
      await ops.heavy(scope.organizationId);
      const op = await start.operate(scope, env.id, input.force ? "redeploy" : "deploy", person, {
        force: input.force,
        ...(input.git_branch ? { git: { branch: input.git_branch } } : {}),
        extraData: deployOptionsExtra(input),
      });
      return { skipped: false as const, message: input.force ? "Redeploy started" : "Deployment started", deployment: op };
    },

    /** Rule 9: force_restore clears the restore flag of a migrated environment so the next deployment restores again. */
    async deployProjectEnvironment(person: SessionPrincipal, projectId: string, environmentId: string, forceRestore: boolean, options?: DeployOptions) {
      const { scope, env } = await ops.deployableEnvironment(person, projectId, environmentId);
      await ops.heavy(scope.organizationId);
      const reset = forceRestore && env.migrationId !== null && env.migrationRestoreCompleted;
      if (reset && deps.migrationBackupStored && !(await deps.migrationBackupStored(env.migrationId!))) {
        throw new DomainError("migration_backup_unavailable", "force_restore needs the migration's backup, which is no longer in the backup store (the migration was deleted or its bytes cleaned up); nothing was changed");
      }
      if (reset) await repo.updateEnvironment(env.id, { migrationRestoreCompleted: false, migrationRestoreCompletedAt: null, updatedAt: deps.clock.now() });
      const op = await start.operate(scope, env.id, "deploy", person, { extraData: { ...deployOptionsExtra(options), ...(reset ? { force_restore: true } : {}) } });
      return {
        skipped: false as const,
        message: reset ? "Deployment started; the migration backup will be restored again, replacing current data" : "Deployment started",
        deployment: op,
        migration_restore_reset: reset,
      };
    },

    /** The domain rules are the environments module's; they go first, so a refused name changes nothing. */
    async updateEnvironment(
      person: SessionPrincipal,
      projectId: string,
      environmentId: string,
      input: { auto_deploy?: boolean | undefined; git_branch?: string | undefined } & StageSettings & DomainsInput & EnvironmentSize & Pick<CreateEnvironmentInput, "stage">,
    ) {
      const a = await deps.access.requireProject(person, projectId, "project.environments.update", "Project");
      await ops.environmentOf(a.organizationId, projectId, environmentId);
      const { auto_deploy, git_branch, ...inPlace } = input;
      if (Object.keys(inPlace).length > 0) await deps.environmentsService.update({ organizationId: a.organizationId, projectId }, environmentId, inPlace, { userId: person.userId, apiKeyId: null });
      return deps.environmentsService.view(
        await repo.updateEnvironment(environmentId, {
          ...(auto_deploy !== undefined ? { autoDeploy: auto_deploy } : {}),
          ...(git_branch !== undefined ? { gitBranch: git_branch } : {}),
          updatedAt: deps.clock.now(),
        }),
      );
    },

    /** The project scope of an environment the caller holds `permission` on. */
    async environmentScope(person: SessionPrincipal, environmentId: string, permission: Permission) {
      return (await ops.environmentWithAccess(person, environmentId, permission)).scope;
    },
  };
}
