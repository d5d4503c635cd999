// The only module that talks to the Docker engine. Every call has a deadline and is
// aborted when it passes it, so a wedged engine cannot stall the agent. Mutating calls
// (workloads.ts) obey the ownership rule in labels.ts.
import Dockerode from "dockerode";
import { dockerCall } from "./docker-call.ts";
import { createWorkloads, type DockerWorkloads, type WorkloadDeadlines } from "./workloads.ts";

export { DockerError } from "./docker-call.ts";

export interface DockerVersionInfo {
  version: string;
  api_version: string;
}

export interface DockerEngineInfo {
  containers_total: number;
  containers_running: number;
  images: number;
  /** Where the engine keeps images and volumes; its filesystem is what fills up. */
  root_dir: string | null;
}

export interface ContainerCounts {
  running: number;
  total: number;
}

export interface DockerDiskUsage {
  images_bytes: number;
  containers_bytes: number;
  volumes_bytes: number;
  build_cache_bytes: number;
  images: number;
  volumes: number;
}

export interface DockerClient extends DockerWorkloads {
  version(): Promise<DockerVersionInfo>;
  info(): Promise<DockerEngineInfo>;
  /** One list call for all containers; never per-container stats (about 1 s each). */
  containerCounts(): Promise<ContainerCounts>;
  /** `docker system df`: walks every layer and volume, so it can take long. */
  diskUsage(deadlineMs?: number): Promise<DockerDiskUsage>;
}

export interface DockerClientOptions {
  socketPath: string;
  /**
   * Deadline of the sampler's and diagnostics' calls (version, info, container counts): short,
   * because a reading that comes late is worth less than a gap. Commands' calls have their own
   * (workloadDeadlines).
   */
  callDeadlineMs?: number;
  /** Default deadline of diskUsage. */
  diskUsageDeadlineMs?: number;
  /** Deadlines of the calls that create, start, stop and remove things. */
  workloadDeadlines?: Partial<WorkloadDeadlines>;
}

// dockerode 5 takes an abortSignal on these calls; its typings (v4) do not say so yet.
type WithSignal = { abortSignal: AbortSignal };
interface SignalledDockerode {
  version(options: WithSignal): Promise<Dockerode.DockerVersion>;
  info(options: WithSignal): Promise<Record<string, unknown>>;
  df(options: WithSignal): Promise<Record<string, unknown>>;
  listContainers(options: WithSignal & { all: boolean }): Promise<Dockerode.ContainerInfo[]>;
}

export function createDockerClient(options: DockerClientOptions): DockerClient {
  const dockerode = new Dockerode({ socketPath: options.socketPath });
  const docker = dockerode as unknown as SignalledDockerode;
  const quick = options.callDeadlineMs ?? 5_000;
  const slow = options.diskUsageDeadlineMs ?? 20_000;
  const call = dockerCall;

  return {
    ...createWorkloads(dockerode, options.workloadDeadlines),
    async version() {
      const v = await call("docker version", quick, (abortSignal) => docker.version({ abortSignal }));
      return { version: String(v.Version), api_version: String(v.ApiVersion) };
    },
    async info() {
      const info = await call("docker info", quick, (abortSignal) => docker.info({ abortSignal }));
      return {
        containers_total: count(info.Containers),
        containers_running: count(info.ContainersRunning),
        images: count(info.Images),
        root_dir: typeof info.DockerRootDir === "string" ? info.DockerRootDir : null,
      };
    },
    async containerCounts() {
      const list = await call("docker container list", quick, (abortSignal) =>
        docker.listContainers({ all: true, abortSignal }),
      );
      return { running: list.filter((c) => c.State === "running").length, total: list.length };
    },
    async diskUsage(deadlineMs = slow) {
      const df = await call("docker system df", deadlineMs, (abortSignal) => docker.df({ abortSignal }));
      const volumes = arrayOf(df.Volumes);
      return {
        images_bytes: count(df.LayersSize),
        containers_bytes: sum(arrayOf(df.Containers), (c) => c.SizeRw),
        volumes_bytes: sum(volumes, (v) => (v.UsageData as Record<string, unknown> | undefined)?.Size),
        build_cache_bytes: sum(arrayOf(df.BuildCache), (b) => b.Size),
        images: arrayOf(df.Images).length,
        volumes: volumes.length,
      };
    },
  };
}

// The engine reports -1 for sizes it did not compute; those count as nothing.
function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function arrayOf(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.filter((v): v is Record<string, unknown> => typeof v === "object" && v !== null) : [];
}

function sum(items: Record<string, unknown>[], pick: (item: Record<string, unknown>) => unknown): number {
  return items.reduce((total, item) => total + count(pick(item)), 0);
}
