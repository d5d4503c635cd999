// What every end-to-end file with a real agent and Docker needs: the locally built test
// images, an agent process enrolled for a server, a shop (a project with one environment on
// the demo organisation's server, its agent online), and removing every Docker object an
// environment left behind.
import Docker from "dockerode";
import { createDemoOrganization, type DemoOrganization } from "@berth/control-plane";
import { AgentProcess } from "./agent-process.ts";
import { startControlPlane, type TestControlPlane } from "./control-plane.ts";
import { waitUntil } from "./wait.ts";

/** Every hosted ERP version's stand-in (test/images: each tag behaves as that version of Odoo). */
export const TEST_IMAGES = {
  erp: { "16.0": "berth-test/erp:16.0", "17.0": "berth-test/erp:17.0", "18.0": "berth-test/erp:18.0", "19.0": "berth-test/erp:19.0" },
  db: "berth-test/postgres:15",
};
/** The servers' proxy in tests: Debian's Caddy (test/images/build.sh); certificates from Let's Encrypt unless a test gives Pebble. */
export const TEST_PROXY = { image: "berth-test/caddy:2", acme_ca: null, acme_ca_root: null, acme_email: null };

/** Points ERP 17.0 and the database at the images test/images/build.sh made. */
export function useTestImages(cp: TestControlPlane): Promise<unknown> {
  return cp.app.services.images.set(TEST_IMAGES);
}

/** A real agent process enrolled (one-time token) for the server and started; `url` defaults to the control plane's own. */
export async function startEnrolledAgent(
  cp: TestControlPlane,
  organizationId: string,
  serverId: string,
  url?: string,
  env: Record<string, string> = {},
): Promise<AgentProcess> {
  const token = await cp.app.services.enrollment.newToken(organizationId, serverId, null);
  const agent = await AgentProcess.create();
  await agent.enroll(url ?? `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`, token.token);
  agent.start(env);
  return agent;
}

export interface Shop {
  cp: TestControlPlane;
  d: DemoOrganization;
  agent: AgentProcess;
  projectId: string;
  /** The project's environment "production" (1 core, 1 GB), not deployed yet. */
  envId: string;
}

/**
 * A listening control plane (1 s heartbeats) using the test images, a demo organisation, a
 * project named `name` (ERP 17.0) on its server with one environment, and a real agent
 * enrolled for that server and online.
 */
export async function startShop(
  name: string,
  options: { cp?: Pick<Parameters<typeof startControlPlane>[0] & object, "baseDomain" | "proxy">; agentEnv?: Record<string, string> } = {},
): Promise<Shop> {
  const cp = await startControlPlane({ listen: true, heartbeatMs: 1000, proxy: TEST_PROXY, ...options.cp });
  await useTestImages(cp);
  const d = await createDemoOrganization(cp.database.db, cp.app.services);
  const org = { organizationId: d.organization_id, projectId: null };
  // No Git repository: the tests reach nothing outside this machine.
  const project = await cp.app.services.projects.create(org, { name, server_id: d.server_id, erp_version: "17.0" });
  const envId = (await cp.app.services.environments.create(org, { project_id: project.id, name: "production", cpu_cores: 1, ram_mb: 1024 })).id;
  const agent = await startEnrolledAgent(cp, d.organization_id, d.server_id, undefined, options.agentEnv);
  await waitUntil("agent online", () => cp.app.gateway.isConnected(d.server_id), { timeoutMs: 60_000, intervalMs: 250, detail: () => agent.output.slice(-3000) });
  return { cp, d, agent, projectId: project.id, envId };
}

const docker = new Docker();

/** Removes what the environments left: containers first, then their volumes and networks. */
export async function removeEnvironmentObjects(environmentIds: string[]): Promise<void> {
  for (const id of environmentIds) {
    const label = { label: [`berth.environment_id=${id}`] };
    const containers = await docker.listContainers({ all: true, filters: label });
    await Promise.all(containers.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(() => {})));
    const { Volumes } = await docker.listVolumes({ filters: label });
    await Promise.all((Volumes ?? []).map((v) => docker.getVolume(v.Name).remove().catch(() => {})));
    const networks = await docker.listNetworks({ filters: label });
    await Promise.all(networks.map((n) => docker.getNetwork(n.Id).remove().catch(() => {})));
  }
}
