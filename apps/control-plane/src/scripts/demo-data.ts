// Builds a complete organisation to try the API with: a server, a project, a running and a
// stopped environment, and four API keys. Used by `npm run seed:demo` and by the tests.
import { randomUUID } from "node:crypto";
import type { Database } from "@berth/db";
import type { Services } from "../services.ts";
import { createDemoDataRepo } from "./demo-data.repo.ts";

export interface DemoOrganization {
  organization_id: string;
  server_id: string;
  project_id: string;
  environments: { running: string; stopped: string };
  api_keys: { org_rw: string; org_ro: string; project_rw: string; project_ro: string };
}

export async function createDemoOrganization(
  db: Database,
  services: Services,
  opts: { name?: string; plan?: string } = {},
): Promise<DemoOrganization> {
  const suffix = randomUUID().slice(0, 8);
  const repo = createDemoDataRepo(db);
  const org = await repo.insertOrganization({ name: opts.name ?? `Demo ${suffix}`, plan: opts.plan ?? "starter" });
  const server = await repo.insertServer({
    organizationId: org.id,
    name: `demo-server-${suffix}`,
    provider: "hetzner",
    region: "fsn1",
    hostname: `demo-${suffix}.example.com`,
    cpuCores: 4,
    ramMb: 8192,
    diskGb: 160,
  });
  const scope = { organizationId: org.id, projectId: null };
  const project = await services.projects.create(scope, {
    name: "Demo ERP",
    server_id: server.id,
    git_repo_url: "https://git.example.com/demo/erp-addons.git",
    default_branch: "main",
    erp_version: "17.0",
  });
  const running = await services.environments.create(scope, { project_id: project.id, name: "production", domain: `erp-${suffix}.example.com` });
  const stopped = await services.environments.create(scope, { project_id: project.id, name: "staging", git_branch: "staging", stage: "staging" });
  await repo.setEnvironmentStatus(running.id, "running");
  await repo.setEnvironmentStatus(stopped.id, "stopped");

  const key = async (access: "read_only" | "full_access", projectId: string | null, name: string) =>
    (await services.apiKeys.create({ organizationId: org.id, projectId, access, name, createdBy: null })).key;
  return {
    organization_id: org.id,
    server_id: server.id,
    project_id: project.id,
    environments: { running: running.id, stopped: stopped.id },
    api_keys: {
      org_rw: await key("full_access", null, "demo organisation full access"),
      org_ro: await key("read_only", null, "demo organisation read-only"),
      project_rw: await key("full_access", project.id, "demo project full access"),
      project_ro: await key("read_only", project.id, "demo project read-only"),
    },
  };
}
