// What every end-to-end file with a real agent and Docker needs: the locally built test
// images, an agent process enrolled for a server, and removing every Docker object an
// environment left behind.
import Docker from "dockerode";
import { AgentProcess } from "./agent-process.ts";
import type { TestControlPlane } from "./control-plane.ts";

export const TEST_IMAGES = { erp: { "17.0": "berth-test/erp:17.0" }, db: "berth-test/postgres:15" };

/** Points ERP 17.0 and the database at the images test/images/build.sh made. */
export function useTestImages(cp: TestControlPlane): Promise<unknown> {
  return cp.app.services.images.set(TEST_IMAGES);
}

/** A real agent process enrolled (one-time token) for the server and started; `url` defaults to the control plane's own. */
export async function startEnrolledAgent(cp: TestControlPlane, organizationId: string, serverId: string, url?: string): Promise<AgentProcess> {
  const token = await cp.app.services.enrollment.newToken(organizationId, serverId, null);
  const agent = await AgentProcess.create();
  await agent.enroll(url ?? `http://127.0.0.1:${(cp.app.server.address() as { port: number }).port}`, token.token);
  agent.start();
  return agent;
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
