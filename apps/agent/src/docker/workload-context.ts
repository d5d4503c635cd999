// What every kind of Docker call (workloads.ts) shares: deadlines, the ownership refusal,
// dockerode's signal, and the inspects that calls changing or entering an existing
// container or network make first (ownership: labels.ts).
import type Dockerode from "dockerode";
import { dockerCall, isNotFound, type DockerCall } from "./docker-call.ts";
import { isManaged, MANAGED_FILTER } from "./labels.ts";

export interface WorkloadDeadlines {
  /**
   * Inspect, list, ping. The engine answers these from memory, but waits on the locks a
   * container create or remove holds; with the vfs driver that is a whole image copy, so a
   * busy engine can take tens of seconds over an inspect that is otherwise instant.
   */
  quick: number;
  /** Create a network or volume, start, rename. */
  change: number;
  /** Create or remove a container: with the vfs driver the engine copies the whole image. */
  heavy: number;
  /** A whole image pull. */
  pull: number;
}

export const DEFAULT_DEADLINES: WorkloadDeadlines = { quick: 30_000, change: 60_000, heavy: 180_000, pull: 15 * 60_000 };

export type Labels = Record<string, string>;

/** Refusal to touch an object Berth does not own. */
export class OwnershipError extends Error {
  readonly code = "not_managed";

  constructor(what: string) {
    super(`${what} is not labelled berth.managed=true: Berth does not touch it`);
    this.name = "OwnershipError";
  }
}

// dockerode 5 takes an abortSignal in every options object; its typings (v4) do not say so.
export function signalled<T extends object>(options: T, abortSignal: AbortSignal): T {
  return { ...options, abortSignal } as T;
}

/** What the calls of every kind share: the engine, the deadlines and the inspects. */
export interface WorkloadContext {
  docker: Dockerode;
  d: WorkloadDeadlines;
  call: DockerCall;
  /** A container id shortened for messages (a name stays as it is). */
  short(id: string): string;
  /** Any container, null when there is none. */
  inspect(idOrName: string): Promise<Dockerode.ContainerInspectInfo | null>;
  /** The container, if it is Berth's; refuses otherwise. */
  owned(idOrName: string): Promise<Dockerode.ContainerInspectInfo>;
  inspectNetwork(idOrName: string): Promise<Dockerode.NetworkInspectInfo>;
}

export function workloadContext(docker: Dockerode, deadlines: Partial<WorkloadDeadlines>): WorkloadContext {
  const d: WorkloadDeadlines = { ...DEFAULT_DEADLINES, ...deadlines };
  const call = dockerCall;
  const short = (id: string) => (/^[0-9a-f]{64}$/.test(id) ? id.slice(0, 12) : id);

  async function inspect(idOrName: string): Promise<Dockerode.ContainerInspectInfo | null> {
    try {
      return await call(`docker inspect ${short(idOrName)}`, d.quick, (abortSignal) =>
        docker.getContainer(idOrName).inspect(signalled({}, abortSignal)),
      );
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  // dockerode does not pass a signal on network (or image) inspect: the deadline still holds,
  // only the socket of a call past it is left to the engine's answer.
  function inspectNetwork(idOrName: string): Promise<Dockerode.NetworkInspectInfo> {
    return call(`docker network inspect ${idOrName}`, d.quick, () => docker.getNetwork(idOrName).inspect());
  }

  /** The container, if it is Berth's; refuses otherwise. */
  async function owned(idOrName: string): Promise<Dockerode.ContainerInspectInfo> {
    const info = await inspect(idOrName);
    if (info === null) throw new OwnershipError(`container ${short(idOrName)} (not found)`);
    if (!isManaged(info.Config.Labels)) throw new OwnershipError(`container ${info.Name.replace(/^\//, "")}`);
    return info;
  }

  return { docker, d, call, short, inspect, owned, inspectNetwork };
}

export function containerName(info: Dockerode.ContainerInspectInfo): string {
  return info.Name.replace(/^\//, "");
}

/** The caller's label filter, always narrowed to Berth's own objects. */
export function withManaged(filter: { label: string[] }): { label: string[] } {
  return { label: [...new Set([...MANAGED_FILTER.label, ...filter.label])] };
}
