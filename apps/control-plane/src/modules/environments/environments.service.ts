// Rules for environments: created inside a visible project, on the project's server,
// with a name unique among the project's active environments.
import type { Clock } from "../../lib/clock.ts";
import type { CursorCodec } from "../../lib/cursor.ts";
import { DomainError, notFound, isUniqueViolation } from "../../lib/errors.ts";
import { listPage, type PageRequest } from "../../db/keyset.ts";
import type { Scope } from "../../lib/scope.ts";
import type { ProjectsRepo } from "../projects/projects.repo.ts";
import type { EnvironmentRow, EnvironmentsRepo } from "./environments.repo.ts";

export interface CreateEnvironmentInput {
  project_id: string;
  name: string;
  git_branch?: string | undefined;
  domain?: string | undefined;
  auto_deploy?: boolean | undefined;
  cpu_cores?: number | undefined;
  ram_mb?: number | undefined;
  disk_gb?: number | undefined;
  workers?: number | undefined;
}

export function environmentView(e: EnvironmentRow) {
  return {
    id: e.id,
    project_id: e.projectId,
    server_id: e.serverId,
    name: e.name,
    status: e.status,
    git_branch: e.gitBranch,
    auto_deploy: e.autoDeploy,
    domain: e.domain,
    cpu_cores: e.cpuCores,
    ram_mb: e.ramMb,
    disk_gb: e.diskGb,
    workers: e.workers,
    is_active: e.isActive,
    container_id: e.containerId,
    container_name: e.containerName,
    migration_id: e.migrationId,
    migration_restore_completed: e.migrationRestoreCompleted,
    migration_restore_completed_at: e.migrationRestoreCompletedAt?.toISOString() ?? null,
    created_at: e.createdAt.toISOString(),
    updated_at: e.updatedAt.toISOString(),
  };
}


export function createEnvironmentsService(deps: {
  environments: EnvironmentsRepo;
  projects: Pick<ProjectsRepo, "get">;
  cursors: CursorCodec;
  clock: Clock;
}) {
  return {
    async get(scope: Scope, id: string) {
      const row = await deps.environments.get(scope, id);
      if (!row) throw notFound("Environment");
      return environmentView(row);
    },
    async listForProject(scope: Scope, projectId: string, page: PageRequest) {
      const project = await deps.projects.get(scope, projectId);
      if (!project) throw notFound("Project");
      return listPage(deps.cursors, `environments:${projectId}`, page, (limit, after) => deps.environments.listForProject(projectId, limit, after), environmentView);
    },
    async create(scope: Scope, input: CreateEnvironmentInput) {
      const project = await deps.projects.get(scope, input.project_id);
      if (!project) throw notFound("Project");
      const now = deps.clock.now();
      try {
        const row = await deps.environments.insert({
          organizationId: scope.organizationId,
          projectId: project.id,
          serverId: project.serverId,
          name: input.name,
          gitBranch: input.git_branch ?? project.defaultBranch,
          domain: input.domain ?? null,
          autoDeploy: input.auto_deploy ?? false,
          ...(input.cpu_cores !== undefined ? { cpuCores: input.cpu_cores } : {}),
          ...(input.ram_mb !== undefined ? { ramMb: input.ram_mb } : {}),
          ...(input.disk_gb !== undefined ? { diskGb: input.disk_gb } : {}),
          ...(input.workers !== undefined ? { workers: input.workers } : {}),
          createdAt: now,
          updatedAt: now,
        });
        return environmentView(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw new DomainError("environment_name_taken", `The project already has an environment named ${JSON.stringify(input.name)}`);
        throw err;
      }
    },
  };
}
export type EnvironmentsService = ReturnType<typeof createEnvironmentsService>;
