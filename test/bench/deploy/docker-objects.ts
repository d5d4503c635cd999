// The Docker objects of the benchmark's environments: found and removed by the label every
// per-environment object carries (berth.environment_id), never by name or by a broad filter.
import Docker from "dockerode";

export const ENVIRONMENT_LABEL = "berth.environment_id";

export function dockerClient(): Docker {
  return new Docker({ socketPath: process.env.BERTH_DOCKER_SOCKET || "/var/run/docker.sock" });
}

function unlessGone(error: unknown): void {
  const status = (error as { statusCode?: number } | null)?.statusCode;
  if (status === 404 || (status === 409 && /already in progress/.test(String(error)))) return;
  throw error;
}

export interface Removed {
  containers: number;
  volumes: number;
  networks: number;
}

/** Containers (with their anonymous volumes), then named volumes, then networks of one environment. */
export async function removeEnvironmentObjects(docker: Docker, environmentId: string): Promise<Removed> {
  const filters = { label: [`${ENVIRONMENT_LABEL}=${environmentId}`] };
  const containers = await docker.listContainers({ all: true, filters });
  // Gone already (404) or being removed by another call (409): what was asked for.
  await Promise.all(containers.map((c) => docker.getContainer(c.Id).remove({ force: true, v: true }).catch(unlessGone)));
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  await Promise.all(volumes.map((v) => docker.getVolume(v.Name).remove().catch(unlessGone)));
  const networks = await docker.listNetworks({ filters });
  await Promise.all(networks.map((n) => docker.getNetwork(n.Id).remove().catch(unlessGone)));
  return { containers: containers.length, volumes: volumes.length, networks: networks.length };
}

/** What is left of the given environments (for the final check). */
export async function leftovers(docker: Docker, environmentIds: Iterable<string>): Promise<string[]> {
  const found: string[] = [];
  for (const id of environmentIds) {
    const filters = { label: [`${ENVIRONMENT_LABEL}=${id}`] };
    const [containers, volumes, networks] = await Promise.all([
      docker.listContainers({ all: true, filters }),
      docker.listVolumes({ filters }),
      docker.listNetworks({ filters }),
    ]);
    const n = containers.length + (volumes.Volumes ?? []).length + networks.length;
    if (n > 0) found.push(`${id}: ${containers.length} containers, ${(volumes.Volumes ?? []).length} volumes, ${networks.length} networks`);
  }
  return found;
}
