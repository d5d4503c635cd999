// Containers: Berth's own only (labels.ts) are listed, made, started, stopped, renamed and
// removed; any container may be inspected (read only).
import type Dockerode from "dockerode";
import { demuxToText } from "./exec-demux.ts";
import { isManaged } from "./labels.ts";
import { containerName, OwnershipError, signalled, withManaged, type Labels, type WorkloadContext } from "./workload-context.ts";

export interface ContainerSummary {
  id: string;
  name: string;
  state: string;
  labels: Labels;
  /** Unix seconds. */
  created: number;
}

export interface ContainerDetails {
  id: string;
  name: string;
  /** The reference it was created from, e.g. "berth-test/erp:17.0". */
  image: string;
  /** The id of the image it runs ("sha256:…"), whatever its reference names now. */
  imageId: string;
  /** Docker's state: created, running, paused, restarting, removing, exited, dead. */
  state: string;
  running: boolean;
  exitCode: number;
  labels: Labels;
  /** First host port published for each container port ("8069/tcp"), null when none. */
  hostPorts: Record<string, string | null>;
  /** The names of the networks it is attached to. */
  networks: string[];
  /** Its mounts: a named volume's name (null for binds and anonymous ones) and where it is mounted. */
  mounts: { type: string; name: string | null; destination: string; readOnly: boolean }[];
}

export interface ContainerSpec {
  name: string;
  image: string;
  /** Must include berth.managed=true. */
  labels: Labels;
  env?: string[];
  cmd?: string[];
  /** Replaces the image's entrypoint (a one-off probe of the image itself). */
  entrypoint?: string[];
  /** The only network it joins (NetworkMode). */
  network: string;
  binds?: string[];
  /** Container ports ("8069/tcp") published on 127.0.0.1, on a host port Docker chooses. */
  publishLoopback?: string[];
  /** Container ports published where the caller says ("" host port: Docker chooses; "" address: every address). */
  publish?: { port: string; hostIp: string; hostPort: string }[];
  nanoCpus?: number;
  memoryBytes?: number;
  restartPolicy?: "no" | "unless-stopped";
  /** Size of /dev/shm (Docker's default is 64 MB). */
  shmSizeBytes?: number;
  /** The user (uid:gid) its process runs as, instead of the image's. */
  user?: string;
  /** Capabilities dropped ("ALL": none left). */
  capDrop?: string[];
  /** no-new-privileges: setuid binaries grant nothing. */
  noNewPrivileges?: boolean;
  /** A read-only root file system (mounts keep their own mode). */
  readOnlyRootfs?: boolean;
  /** tmpfs mounts: path → mount options ("ro,size=16k"); one on an image's VOLUME replaces its anonymous volume. */
  tmpfs?: Record<string, string>;
  /** Stdin kept open for one attached client, closed at its end (runToCompletion's `stdin`). */
  openStdin?: boolean;
}

export interface ContainerCalls {
  /** Berth's containers matching the label filter, stopped ones included. */
  listContainers(filter: { label: string[] }): Promise<ContainerSummary[]>;
  /** Any container by id or name (read only), null when there is none. */
  inspectContainer(idOrName: string): Promise<ContainerDetails | null>;
  createContainer(spec: ContainerSpec): Promise<string>;
  startContainer(id: string): Promise<void>;
  stopContainer(id: string, graceSeconds: number): Promise<void>;
  restartContainer(id: string, graceSeconds: number): Promise<void>;
  /** Removes it with its anonymous volumes; force stops it first. */
  removeContainer(id: string): Promise<void>;
  renameContainer(id: string, name: string): Promise<void>;
  /** The last lines of its stdout and stderr. */
  containerLogs(id: string, tail: number): Promise<string>;
}

export function containerCalls({ docker, d, call, inspect, owned }: WorkloadContext): ContainerCalls {
  return {
    async listContainers(filter) {
      const list = await call("docker container list", d.quick, (abortSignal) =>
        docker.listContainers(signalled({ all: true, filters: withManaged(filter) }, abortSignal)),
      );
      return list
        .filter((c) => isManaged(c.Labels))
        .map((c) => ({
          id: c.Id,
          name: (c.Names[0] ?? c.Id).replace(/^\//, ""),
          state: c.State,
          labels: c.Labels,
          created: c.Created,
        }));
    },

    async inspectContainer(idOrName) {
      const info = await inspect(idOrName);
      return info === null ? null : details(info);
    },

    async createContainer(spec) {
      if (!isManaged(spec.labels)) throw new OwnershipError(`new container ${spec.name}`);
      const publish = [
        ...(spec.publishLoopback ?? []).map((port) => ({ port, hostIp: "127.0.0.1", hostPort: "" })),
        ...(spec.publish ?? []),
      ];
      const options: Dockerode.ContainerCreateOptions = {
        name: spec.name,
        Image: spec.image,
        Labels: spec.labels,
        ...(spec.env === undefined ? {} : { Env: spec.env }),
        ...(spec.cmd === undefined ? {} : { Cmd: spec.cmd }),
        ...(spec.entrypoint === undefined ? {} : { Entrypoint: spec.entrypoint }),
        ...(spec.user === undefined ? {} : { User: spec.user }),
        ...(spec.openStdin === true ? { OpenStdin: true, StdinOnce: true, AttachStdin: true } : {}),
        ExposedPorts: Object.fromEntries(publish.map((p) => [p.port, {}])),
        HostConfig: {
          NetworkMode: spec.network,
          Binds: spec.binds ?? [],
          // An empty HostPort lets Docker choose a free one.
          PortBindings: Object.fromEntries(publish.map((p) => [p.port, [{ HostIp: p.hostIp, HostPort: p.hostPort }]])),
          RestartPolicy: { Name: spec.restartPolicy ?? "no" },
          ...(spec.nanoCpus === undefined ? {} : { NanoCpus: spec.nanoCpus }),
          ...(spec.memoryBytes === undefined ? {} : { Memory: spec.memoryBytes }),
          ...(spec.shmSizeBytes === undefined ? {} : { ShmSize: spec.shmSizeBytes }),
          ...(spec.capDrop === undefined ? {} : { CapDrop: spec.capDrop }),
          ...(spec.noNewPrivileges === true ? { SecurityOpt: ["no-new-privileges"] } : {}),
          ...(spec.readOnlyRootfs === true ? { ReadonlyRootfs: true } : {}),
          ...(spec.tmpfs === undefined ? {} : { Tmpfs: spec.tmpfs }),
        },
      };
      const container = await call(`docker create ${spec.name}`, d.heavy, (abortSignal) =>
        docker.createContainer(signalled(options, abortSignal)),
      );
      return container.id;
    },

    async startContainer(id) {
      const info = await owned(id);
      await call(`docker start ${containerName(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).start(signalled({}, abortSignal)),
      );
    },

    async stopContainer(id, graceSeconds) {
      const info = await owned(id);
      await call(`docker stop ${containerName(info)}`, graceSeconds * 1000 + d.change, (abortSignal) =>
        docker.getContainer(info.Id).stop(signalled({ t: graceSeconds }, abortSignal)),
      ).catch((error: unknown) => {
        // 304: it was not running, which is what was asked for.
        if ((error as { statusCode?: number }).statusCode !== 304 && !String(error).includes("already stopped")) throw error;
      });
    },

    async restartContainer(id, graceSeconds) {
      const info = await owned(id);
      await call(`docker restart ${containerName(info)}`, graceSeconds * 1000 + d.change, (abortSignal) =>
        docker.getContainer(info.Id).restart(signalled({ t: graceSeconds }, abortSignal)),
      );
    },

    async removeContainer(id) {
      const info = await owned(id);
      await call(`docker rm ${containerName(info)}`, d.heavy, (abortSignal) =>
        docker.getContainer(info.Id).remove(signalled({ force: true, v: true }, abortSignal)),
      );
    },

    async renameContainer(id, newName) {
      const info = await owned(id);
      await call(`docker rename ${containerName(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).rename(signalled({ name: newName }, abortSignal)),
      );
    },

    async containerLogs(id, tail) {
      const info = await owned(id);
      const logs = await call(`docker logs ${containerName(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).logs(signalled({ stdout: true, stderr: true, tail, follow: false as const }, abortSignal)),
      );
      return info.Config.Tty ? logs.toString("utf8") : demuxToText(logs);
    },
  };
}

function details(info: Dockerode.ContainerInspectInfo): ContainerDetails {
  const ports = (info.NetworkSettings?.Ports ?? {}) as Record<string, { HostIp: string; HostPort: string }[] | null>;
  return {
    id: info.Id,
    name: containerName(info),
    image: info.Config.Image,
    imageId: info.Image,
    state: info.State.Status,
    running: info.State.Running,
    exitCode: info.State.ExitCode,
    labels: info.Config.Labels ?? {},
    hostPorts: Object.fromEntries(Object.entries(ports).map(([port, bindings]) => [port, bindings?.[0]?.HostPort || null])),
    networks: Object.keys(info.NetworkSettings?.Networks ?? {}),
    mounts: (info.Mounts ?? []).map((m) => ({
      type: String(m.Type),
      name: m.Type === "volume" && m.Name !== undefined && m.Name !== "" ? m.Name : null,
      destination: m.Destination,
      readOnly: m.RW === false,
    })),
  };
}
