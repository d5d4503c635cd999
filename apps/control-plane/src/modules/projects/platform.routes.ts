// Platform API routes of projects, for the dashboard: the projects and environments a
// person can see, with their role and permission codes in each.
import { Type } from "typebox";
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { errors, Nullable, Timestamp, Uuid } from "../../lib/http-schemas.ts";
import type { Access } from "../auth/access.ts";
import { permissionsOf } from "../auth/permissions.ts";
import { personOf } from "../auth/session-principal.ts";
import type { EnvironmentsRepo } from "../environments/environments.repo.ts";
import type { EnvironmentAddresses } from "../environments/domains.ts";
import { EnvironmentAddress } from "../environments/environments.routes.ts";
import { addressView } from "../environments/environments.service.ts";
import { LastBackup, lastBackupView } from "../backups/last-backup.ts";

const TAG = ["Dashboard"];
const OrgParams = Type.Object({ organization_id: Uuid });
const num = Type.Number();
const DashboardEnvironment = Type.Object({
  id: Uuid,
  name: Type.String(),
  status: Type.String(),
  git_branch: Type.String(),
  domain: Nullable(Type.String()),
  auto_deploy: Type.Boolean(),
  server_id: Nullable(Uuid),
  server_name: Nullable(Type.String()),
  cpu_cores: num,
  ram_mb: num,
  disk_gb: num,
  ...EnvironmentAddress,
  last_deployment: Nullable(Type.Object({ id: Uuid, kind: Type.String(), status: Type.String(), version: Type.Integer(), created_at: Timestamp })),
  last_backup: LastBackup,
});
const DashboardProject = Type.Object({
  id: Uuid,
  name: Type.String(),
  erp_version: Nullable(Type.String()),
  role: Type.String(),
  permissions: Type.Array(Type.String()),
  environments: Type.Array(DashboardEnvironment),
});
const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

export function projectsPlatformRoutes(deps: {
  access: Pick<Access, "requireOrg" | "projects">;
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
              role: pr.role,
              permissions: permissionsOf(pr.role),
              environments: envs
                .filter((e) => e.project_id === pr.id)
                .map((e) => ({
                  id: e.id,
                  name: e.name,
                  status: e.status,
                  git_branch: e.git_branch,
                  domain: e.domain,
                  auto_deploy: e.auto_deploy,
                  server_id: e.server_id,
                  server_name: e.server_name,
                  cpu_cores: e.cpu_cores,
                  ram_mb: e.ram_mb,
                  disk_gb: e.disk_gb,
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
  };
}
