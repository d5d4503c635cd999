// Platform API routes of projects, for the dashboard: the projects and environments a
// person can see, with their role and permission codes in each, and making, changing and
// deleting projects and environments with the public API's rules (same services, same
// validation and messages), under the platform's permission codes.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, refTo, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { permissionsOf } from "../auth/permissions.ts";
import { personOf } from "../auth/session-principal.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { EnvironmentAddresses } from "../environments/domains.ts";
import { EnvironmentAddress } from "../environments/environments.routes.ts";
import { addressView } from "../environments/environments.service.ts";
import { LastBackup, lastBackupView } from "../backups/last-backup.ts";
import { CreateEnvironment, Environment, StageView } from "../environments/environments.routes.ts";
import type { EnvironmentsService } from "../environments/environments.service.ts";
import { CreateProject, Project, UpdateProject } from "./projects.routes.ts";
import type { ProjectsService } from "./projects.service.ts";

const TAG = ["Dashboard"];
const OrgParams = Type.Object({ organization_id: Uuid });
const ProjectParams = Type.Object({ project_id: Uuid });
const ProjectRef = refTo(Project);
const EnvironmentRef = refTo(Environment);
const { project_id: _projectId, ...environmentFields } = CreateEnvironment.properties;
const CreateProjectEnvironment = Type.Object(environmentFields, { additionalProperties: false });
const num = Type.Number();
const DashboardEnvironment = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Type.String(),
  stage: StageView,
  require_passing_tests: Environment.properties.require_passing_tests,
  refresh_on_push: Environment.properties.refresh_on_push,
  git_branch: Type.String(),
  domain: Nullable(Type.String()),
  auto_deploy: Type.Boolean(),
  server_id: Nullable(Uuid),
  server_name: Nullable(Type.String()),
  cpu_cores: num,
  ram_mb: num,
  disk_gb: num,
  workers: num,
  ...EnvironmentAddress,
  last_deployment: Nullable(Type.Object({ id: Uuid, kind: Type.String(), status: Type.String(), version: Type.Integer(), created_at: Timestamp })),
  last_backup: LastBackup,
});
const DashboardProject = Type.Object({
  id: Uuid,
  name: Type.String(),
  erp_version: Nullable(Type.String()),
  default_branch: Nullable(Type.String()),
  git_repo_url: Nullable(Type.String({ description: "Without credentials" })),
  development_server_id: Project.properties.development_server_id,
  development_limit: Project.properties.development_limit,
  role: Type.String(),
  permissions: Type.Array(Type.String()),
  environments: Type.Array(DashboardEnvironment),
});
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function projectsPlatformRoutes(deps: {
  access: Pick<Access, "requireOrg" | "requireProject" | "projects">;
  projects: Pick<ProjectsService, "create" | "update" | "remove">;
  environmentsService: Pick<EnvironmentsService, "create">;
  environments: Pick<EnvironmentsRepo, "overview">;
  addresses: EnvironmentAddresses;
}): FastifyPluginAsyncTypebox {
  const { access } = deps;
  return async (app) => {
    app.get(
      "/organizations/:organization_id/projects",
      {
        schema: {
          tags: TAG,
          summary: "Projects and environments I can see",
          description: "Organisation owners and admins see every project; others the projects they hold a role in. Each project carries the caller's role and permission codes there.",
          params: OrgParams,
          response: { 200: Type.Object({ data: Type.Array(DashboardProject) }), ...errors(404) },
        },
      },
      async (request) => {
        const p = personOf(request);
        const orgId = request.params.organization_id;
        const role = await access.requireOrg(p, orgId, "org.view");
        const projects = await access.projects(p, { organizationId: orgId, role });
        const envs = await deps.environments.overview(projects.map((pr) => pr.id));
        return {
          data: projects.map((pr) => {
            return {
              id: pr.id,
              name: pr.name,
              erp_version: pr.erpVersion,
              default_branch: pr.defaultBranch,
              git_repo_url: pr.gitRepoUrl,
              development_server_id: pr.developmentServerId,
              development_limit: pr.developmentLimit,
              role: pr.role,
              permissions: permissionsOf(pr.role),
              environments: envs
                .filter((e) => e.project_id === pr.id)
                .map((e) => ({
                  id: e.id,
                  name: e.name,
                  status: e.status,
                  stage: e.stage,
                  require_passing_tests: e.require_passing_tests,
                  refresh_on_push: e.refresh_on_push,
                  git_branch: e.git_branch,
                  domain: e.domain,
                  auto_deploy: e.auto_deploy,
                  server_id: e.server_id,
                  server_name: e.server_name,
                  cpu_cores: e.cpu_cores,
                  ram_mb: e.ram_mb,
                  disk_gb: e.disk_gb,
                  workers: e.workers,
                  ...addressView(e, deps.addresses),
                  last_deployment:
                    e.last_id === null
                      ? null
                      : { id: e.last_id, kind: e.last_kind!, status: e.last_status!, version: e.last_version!, created_at: iso(e.last_created_at)! },
                  last_backup: lastBackupView(e.last_backup),
                })),
            };
          }),
        };
      },
    );

    app.post(
      "/organizations/:organization_id/projects",
      {
        schema: {
          tags: TAG,
          summary: "Create a project",
          description: "A project on one of the organisation's servers, as POST /projects of the public API does it. Needs org.projects.manage (organisation admins and owners).",
          params: OrgParams,
          body: CreateProject,
          response: { 201: ProjectRef, ...errors(404, 422) },
        },
      },
      async (request, reply) => {
        const orgId = request.params.organization_id;
        await access.requireOrg(personOf(request), orgId, "org.projects.manage");
        return reply.code(201).send(await deps.projects.create({ organizationId: orgId, projectId: null }, request.body));
      },
    );

    app.patch(
      "/projects/:project_id",
      {
        schema: {
          tags: TAG,
          summary: "Change a project",
          description:
            "Name, default branch, repository URL (null removes it), or the development settings: development_server_id (null: pushes create no development " +
            "environment; a server of another organisation: 422 `development_server_invalid`) and development_limit. Needs org.projects.manage.",
          params: ProjectParams,
          body: UpdateProject,
          response: { 200: ProjectRef, ...errors(404, 422) },
        },
      },
      async (request) => {
        const { organizationId } = await access.requireProject(personOf(request), request.params.project_id, "org.projects.manage");
        return deps.projects.update({ organizationId, projectId: null }, request.params.project_id, request.body);
      },
    );

    app.delete(
      "/projects/:project_id",
      {
        schema: {
          tags: TAG,
          summary: "Delete a project",
          description: "Refused with 409 environments_running while an environment is running or deploying (stop or destroy them first). Needs org.projects.manage.",
          params: ProjectParams,
          response: { 204: Type.Null(), ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const { organizationId } = await access.requireProject(personOf(request), request.params.project_id, "org.projects.manage");
        await deps.projects.remove({ organizationId, projectId: null }, request.params.project_id);
        return reply.code(204).send(null);
      },
    );

    app.post(
      "/projects/:project_id/environments",
      {
        schema: {
          tags: TAG,
          summary: "Create an environment",
          description:
            "An environment (status pending) of the project on the project's server, as POST /environments of the public API does it; deploy it to start it. " +
            "Needs project.environments.update (project admins, organisation admins and owners).",
          params: ProjectParams,
          body: CreateProjectEnvironment,
          response: { 201: EnvironmentRef, ...errors(404, 409) },
        },
      },
      async (request, reply) => {
        const projectId = request.params.project_id;
        const { organizationId } = await access.requireProject(personOf(request), projectId, "project.environments.update");
        return reply.code(201).send(await deps.environmentsService.create({ organizationId, projectId: null }, { ...request.body, project_id: projectId }));
      },
    );
  };
}
