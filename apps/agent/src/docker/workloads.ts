// The Docker calls that run environments, one file per kind of object: images.ts,
// networks.ts, volumes.ts, containers.ts, exec.ts (exec and one-off runs) and archives.ts
// (docker cp); what they share is workload-context.ts. Every call has a deadline
// (docker-call.ts). Ownership (labels.ts) is enforced there, not by callers: lists only ever
// return Berth's objects, objects are created only with Berth's label, and every call that
// changes or enters an existing object inspects it first and refuses one that is not Berth's.
import type Dockerode from "dockerode";
import { archiveCalls, type ArchiveCalls } from "./archives.ts";
import { containerCalls, type ContainerCalls } from "./containers.ts";
import { execCalls, type ExecCalls } from "./exec.ts";
import { imageCalls, type ImageCalls } from "./images.ts";
import { networkCalls, type NetworkCalls } from "./networks.ts";
import { volumeCalls, type VolumeCalls } from "./volumes.ts";
import { workloadContext, type WorkloadDeadlines } from "./workload-context.ts";

export type { ContainerDetails, ContainerSpec, ContainerSummary } from "./containers.ts";
export type { ExecOptions, ExecResult, RunOptions, RunResult } from "./exec.ts";
export type { NetworkSummary } from "./networks.ts";
export type { VolumeSummary } from "./volumes.ts";
export { OwnershipError, type Labels, type WorkloadDeadlines } from "./workload-context.ts";

export interface DockerWorkloads extends ImageCalls, NetworkCalls, VolumeCalls, ContainerCalls, ExecCalls, ArchiveCalls {
  ping(): Promise<void>;
}

export function createWorkloads(docker: Dockerode, deadlines: Partial<WorkloadDeadlines> = {}): DockerWorkloads {
  const c = workloadContext(docker, deadlines);
  const containers = containerCalls(c);
  return {
    async ping() {
      const ping = docker.ping as unknown as (options: object) => Promise<unknown>;
      await c.call("docker ping", c.d.quick, (abortSignal) => ping.call(docker, { abortSignal }));
    },
    ...imageCalls(c),
    ...networkCalls(c),
    ...volumeCalls(c),
    ...containers,
    ...execCalls(c, containers),
    ...archiveCalls(c),
  };
}
