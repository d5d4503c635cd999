// Running containers on the real engine for the agent's sampler to see: the cheapest kind,
// busybox `sleep` in the stand-in ERP image (test/images), labelled as Berth's and as this
// benchmark's. Each sleeps for a bounded time and is auto-removed when it exits, so even a
// benchmark killed with SIGKILL leaves nothing behind for long; removeBenchContainers() is
// the normal way out, and also clears what an earlier, killed run left.
import Docker from "dockerode";

export const BENCH_LABEL = "berth.bench";
export const BENCH_VALUE = "agent";
const LABELS = { "berth.managed": "true", [BENCH_LABEL]: BENCH_VALUE };

export interface BenchContainers {
  ids: string[];
  /** How many of ours the engine reports running right now. */
  running(): Promise<number>;
  remove(): Promise<void>;
}

export function dockerClient(socketPath = process.env.BERTH_DOCKER_SOCKET || "/var/run/docker.sock"): Docker {
  return new Docker({ socketPath });
}

export async function removeBenchContainers(docker: Docker): Promise<number> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${BENCH_LABEL}=${BENCH_VALUE}`] } });
  await Promise.all(
    list.map((c) =>
      docker
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch((error: unknown) => {
          // Already being removed (AutoRemove) or gone: nothing left to do.
          if (!/no such container|already in progress/i.test(String(error))) throw error;
        }),
    ),
  );
  return list.length;
}

export async function startBenchContainers(
  docker: Docker,
  opts: { count: number; image: string; lifetimeS: number },
): Promise<BenchContainers> {
  const ids: string[] = [];
  const remove = async () => {
    await removeBenchContainers(docker);
  };
  try {
    await docker.getImage(opts.image).inspect();
  } catch {
    throw new Error(`image ${opts.image} is missing: build the test images with \`bash .ci/docker-setup.sh\` (or test/images/build.sh)`);
  }
  try {
    await Promise.all(
      Array.from({ length: opts.count }, async (_, i) => {
        const container = await docker.createContainer({
          name: `berth-bench-agent-${process.pid}-${i}`,
          Image: opts.image,
          Entrypoint: ["sleep"],
          Cmd: [String(Math.ceil(opts.lifetimeS))],
          Labels: LABELS,
          HostConfig: { AutoRemove: true, NetworkMode: "none" },
        });
        ids.push(container.id);
        await container.start();
      }),
    );
  } catch (error) {
    await remove().catch(() => {});
    throw error;
  }
  return {
    ids,
    async running() {
      const list = await docker.listContainers({ filters: { label: [`${BENCH_LABEL}=${BENCH_VALUE}`], status: ["running"] } });
      return list.filter((c) => ids.includes(c.Id)).length;
    },
    remove,
  };
}
