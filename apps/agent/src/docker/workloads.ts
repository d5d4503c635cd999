// The Docker calls that run environments: images, networks, volumes, containers, exec and
// archives. Every call has a deadline (docker-call.ts). Ownership (labels.ts) is enforced
// here, not by callers: lists only ever return Berth's objects, objects are created only
// with Berth's label, and every call that changes or enters an existing object inspects it
// first and refuses one that is not Berth's.
import { Writable, type Duplex, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type Dockerode from "dockerode";
import { dockerCall, isNotFound } from "./docker-call.ts";
import { ExecDemux, demuxToText } from "./exec-demux.ts";
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

const DEFAULT_DEADLINES: WorkloadDeadlines = { quick: 30_000, change: 60_000, heavy: 180_000, pull: 15 * 60_000 };

export type Labels = Record<string, string>;

export interface NetworkSummary {
  id: string;
  name: string;
  labels: Labels;
}

export interface VolumeSummary {
  name: string;
  labels: Labels;
}

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

export interface ExecOptions {
  deadlineMs: number;
  /** Fed to the command's stdin, which is closed at its end. */
  stdin?: Readable;
  /** Receives stdout (with backpressure); without it stdout is collected, bounded. */
  stdout?: Writable;
  user?: string;
}

export interface ExecResult {
  exitCode: number;
  /** Empty when `stdout` was given. */
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  deadlineMs: number;
  signal?: AbortSignal;
  onLine?: (line: string) => void;
  /** How many of the last output lines the result keeps (default 40). */
  tailLines?: number;
  /**
   * Fed to the container's stdin, which is closed at its end; the run fails with its error if
   * it fails or closes before its end (the container is then killed).
   */
  stdin?: Readable;
  /** Receives stdout; the lines (onLine, tail) are then stderr's only. */
  stdout?: Writable;
}

export interface RunResult {
  exitCode: number;
  /** The last output lines, oldest first. */
  tail: string[];
  /** True when it was killed at its deadline or on the signal. */
  killed: boolean;
}

/** Refusal to touch an object Berth does not own. */
export class OwnershipError extends Error {
  readonly code = "not_managed";

  constructor(what: string) {
    super(`${what} is not labelled berth.managed=true: Berth does not touch it`);
    this.name = "OwnershipError";
  }
}

export interface DockerWorkloads {
  ping(): Promise<void>;
  imageExists(ref: string): Promise<boolean>;
  /** The image's id ("sha256:…"), null when it is not present locally. */
  imageId(ref: string): Promise<string | null>;
  pullImage(ref: string): Promise<void>;
  findNetwork(name: string): Promise<NetworkSummary | null>;
  createNetwork(name: string, labels: Labels): Promise<NetworkSummary>;
  /** Berth's networks matching the label filter. */
  listNetworks(filter: { label: string[] }): Promise<NetworkSummary[]>;
  removeNetwork(idOrName: string): Promise<void>;
  findVolume(name: string): Promise<VolumeSummary | null>;
  createVolume(name: string, labels: Labels): Promise<VolumeSummary>;
  listVolumes(filter: { label: string[] }): Promise<VolumeSummary[]>;
  removeVolume(name: string): Promise<void>;
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
  /** Attaches a Berth container to a Berth network; attached already is success. */
  connectNetwork(network: string, containerId: string): Promise<void>;
  /** Detaches it; not attached (or the network gone) is success. */
  disconnectNetwork(network: string, containerId: string): Promise<void>;
  /** Runs an argument vector (never a shell string) in a running container. */
  exec(id: string, cmd: string[], options: ExecOptions): Promise<ExecResult>;
  /**
   * A one-off container: created from `spec`, started, its output (stdout and stderr) given
   * line by line to `onLine` as it comes, waited for, then removed (with its anonymous
   * volumes) whatever happened. Past the deadline or on `signal` it is killed.
   */
  runToCompletion(spec: ContainerSpec, options: RunOptions): Promise<RunResult>;
  /** The last lines of its stdout and stderr. */
  containerLogs(id: string, tail: number): Promise<string>;
  /** `docker cp` out: a tar of `path` into `sink`; works on stopped containers too. */
  readArchive(id: string, path: string, sink: Writable, deadlineMs: number): Promise<void>;
  /** `docker cp` in: extracts a tar into `path`, keeping its owners; works on stopped containers too. */
  writeArchive(id: string, path: string, tar: Readable, deadlineMs: number): Promise<void>;
}

// dockerode 5 takes an abortSignal in every options object; its typings (v4) do not say so.
function signalled<T extends object>(options: T, abortSignal: AbortSignal): T {
  return { ...options, abortSignal } as T;
}

export function createWorkloads(docker: Dockerode, deadlines: Partial<WorkloadDeadlines> = {}): DockerWorkloads {
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

  const api: DockerWorkloads = {
    async ping() {
      const ping = docker.ping as unknown as (options: object) => Promise<unknown>;
      await call("docker ping", d.quick, (abortSignal) => ping.call(docker, { abortSignal }));
    },

    async imageExists(ref) {
      try {
        await call(`docker image inspect ${ref}`, d.quick, () => docker.getImage(ref).inspect());
        return true;
      } catch (error) {
        if (isNotFound(error)) return false;
        throw error;
      }
    },

    async imageId(ref) {
      try {
        const info = await call(`docker image inspect ${ref}`, d.quick, () => docker.getImage(ref).inspect());
        return info.Id;
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },

    async pullImage(ref) {
      await call(`docker pull ${ref}`, d.pull, async (abortSignal) => {
        const pull = docker.pull as unknown as (ref: string, options: object) => Promise<NodeJS.ReadableStream>;
        const stream = await pull.call(docker, ref, { abortSignal });
        // Errors of a started pull (unknown tag, unreachable registry) arrive in the stream.
        await new Promise<void>((resolve, reject) =>
          docker.modem.followProgress(stream, (error: unknown) => (error ? reject(error) : resolve())),
        );
      });
    },

    async findNetwork(name) {
      try {
        const info = await inspectNetwork(name);
        return { id: info.Id, name: info.Name, labels: info.Labels ?? {} };
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },

    async createNetwork(name, labels) {
      if (!isManaged(labels)) throw new OwnershipError(`new network ${name}`);
      const network = await call(`docker network create ${name}`, d.change, (abortSignal) =>
        docker.createNetwork(signalled({ Name: name, Driver: "bridge", CheckDuplicate: true, Labels: labels }, abortSignal)),
      );
      return { id: network.id, name, labels };
    },

    async listNetworks(filter) {
      const list = await call("docker network list", d.quick, (abortSignal) =>
        docker.listNetworks(signalled({ filters: withManaged(filter) }, abortSignal)),
      );
      return list.filter((n) => isManaged(n.Labels)).map((n) => ({ id: n.Id, name: n.Name, labels: n.Labels ?? {} }));
    },

    async removeNetwork(idOrName) {
      const info = await inspectNetwork(idOrName);
      if (!isManaged(info.Labels)) throw new OwnershipError(`network ${info.Name}`);
      await call(`docker network rm ${info.Name}`, d.change, (abortSignal) =>
        docker.getNetwork(info.Id).remove(signalled({}, abortSignal)),
      );
    },

    async findVolume(name) {
      try {
        const info = await call(`docker volume inspect ${name}`, d.quick, (abortSignal) =>
          docker.getVolume(name).inspect(signalled({}, abortSignal)),
        );
        return { name: info.Name, labels: info.Labels ?? {} };
      } catch (error) {
        if (isNotFound(error)) return null;
        throw error;
      }
    },

    async createVolume(name, labels) {
      if (!isManaged(labels)) throw new OwnershipError(`new volume ${name}`);
      await call(`docker volume create ${name}`, d.change, (abortSignal) =>
        docker.createVolume(signalled({ Name: name, Labels: labels }, abortSignal)),
      );
      return { name, labels };
    },

    async listVolumes(filter) {
      const list = await call("docker volume list", d.quick, (abortSignal) =>
        docker.listVolumes(signalled({ filters: withManaged(filter) }, abortSignal)),
      );
      return (list.Volumes ?? []).filter((v) => isManaged(v.Labels)).map((v) => ({ name: v.Name, labels: v.Labels ?? {} }));
    },

    async removeVolume(name) {
      const info = await call(`docker volume inspect ${name}`, d.quick, (abortSignal) =>
        docker.getVolume(name).inspect(signalled({}, abortSignal)),
      );
      if (!isManaged(info.Labels)) throw new OwnershipError(`volume ${name}`);
      await call(`docker volume rm ${name}`, d.change, (abortSignal) =>
        docker.getVolume(name).remove(signalled({}, abortSignal)),
      );
    },

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
      await call(`docker start ${name(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).start(signalled({}, abortSignal)),
      );
    },

    async stopContainer(id, graceSeconds) {
      const info = await owned(id);
      await call(`docker stop ${name(info)}`, graceSeconds * 1000 + d.change, (abortSignal) =>
        docker.getContainer(info.Id).stop(signalled({ t: graceSeconds }, abortSignal)),
      ).catch((error: unknown) => {
        // 304: it was not running, which is what was asked for.
        if ((error as { statusCode?: number }).statusCode !== 304 && !String(error).includes("already stopped")) throw error;
      });
    },

    async restartContainer(id, graceSeconds) {
      const info = await owned(id);
      await call(`docker restart ${name(info)}`, graceSeconds * 1000 + d.change, (abortSignal) =>
        docker.getContainer(info.Id).restart(signalled({ t: graceSeconds }, abortSignal)),
      );
    },

    async removeContainer(id) {
      const info = await owned(id);
      await call(`docker rm ${name(info)}`, d.heavy, (abortSignal) =>
        docker.getContainer(info.Id).remove(signalled({ force: true, v: true }, abortSignal)),
      );
    },

    async renameContainer(id, newName) {
      const info = await owned(id);
      await call(`docker rename ${name(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).rename(signalled({ name: newName }, abortSignal)),
      );
    },

    async connectNetwork(network, containerId) {
      const info = await owned(containerId);
      const net = await inspectNetwork(network);
      if (!isManaged(net.Labels)) throw new OwnershipError(`network ${net.Name}`);
      if (Object.keys(info.NetworkSettings?.Networks ?? {}).includes(net.Name)) return;
      await call(`docker network connect ${net.Name} ${name(info)}`, d.change, () =>
        docker.getNetwork(net.Id).connect({ Container: info.Id }),
      ).catch((error: unknown) => {
        // Attached meanwhile (a concurrent connect): what was asked for.
        if (!/already exists|already attached/i.test(String(error))) throw error;
      });
    },

    async disconnectNetwork(network, containerId) {
      const info = await owned(containerId);
      if (!Object.keys(info.NetworkSettings?.Networks ?? {}).includes(network)) return;
      await call(`docker network disconnect ${network} ${name(info)}`, d.change, () =>
        docker.getNetwork(network).disconnect({ Container: info.Id, Force: true }),
      ).catch((error: unknown) => {
        if (!isNotFound(error) && !/is not connected/i.test(String(error))) throw error;
      });
    },

    async exec(id, cmd, options) {
      const info = await owned(id);
      const what = `docker exec ${cmd[0] ?? ""} in ${name(info)}`;
      return call(what, options.deadlineMs, async (abortSignal) => {
        const withStdin = options.stdin !== undefined;
        const exec = await docker.getContainer(info.Id).exec(
          signalled(
            {
              Cmd: cmd,
              AttachStdin: withStdin,
              AttachStdout: true,
              AttachStderr: true,
              ...(options.user === undefined ? {} : { User: options.user }),
            },
            abortSignal,
          ),
        );
        const socket = (await exec.start(signalled({ hijack: true, stdin: withStdin }, abortSignal))) as Duplex;
        const stop = () => socket.destroy();
        abortSignal.addEventListener("abort", stop, { once: true });
        try {
          const demux = new ExecDemux();
          const collected = options.stdout === undefined ? boundedSink(256 * 1024) : null;
          const output = pipeline(socket, demux, options.stdout ?? (collected as BoundedSink).sink);
          const input = options.stdin === undefined ? Promise.resolve() : feed(options.stdin, socket);
          await Promise.all([output, input]);
          const exitCode = await exitCodeOf(exec, abortSignal);
          return { exitCode, stdout: collected?.text() ?? "", stderr: demux.stderr() };
        } finally {
          abortSignal.removeEventListener("abort", stop);
          socket.destroy();
        }
      });
    },

    async runToCompletion(spec, options) {
      const withStdin = options.stdin !== undefined;
      const id = await api.createContainer(withStdin ? { ...spec, openStdin: true } : spec);
      const container = docker.getContainer(id);
      const keep = options.tailLines ?? 40;
      const tail: string[] = [];
      let killed = false;
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), options.deadlineMs);
      const onAbort = () => controller.abort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      let pending = "";
      const take = (text: string) => {
        pending += text;
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const raw of lines) {
          const line = raw.replace(/\r$/, "");
          tail.push(line);
          if (tail.length > keep) tail.shift();
          options.onLine?.(line);
        }
      };
      const sink = () =>
        new Writable({
          write(chunk: Buffer, _encoding, done) {
            take(chunk.toString("utf8"));
            done();
          },
        });
      try {
        // Attach before start, so no line is missed.
        // With stdin the connection is hijacked: one socket carries stdin in and the output out.
        const stream = (await call(`docker attach ${spec.name}`, d.change, (abortSignal) =>
          container.attach(
            signalled({ stream: true, stdout: true, stderr: true, logs: true, ...(withStdin ? { stdin: true, hijack: true } : {}) }, abortSignal),
          ),
        )) as Duplex;
        const ended = new Promise<void>((resolve) => {
          stream.on("end", () => resolve());
          stream.on("close", () => resolve());
          stream.on("error", () => resolve());
        });
        docker.modem.demuxStream(stream, options.stdout ?? sink(), sink());
        await api.startContainer(id);
        let inputFailed: { error: unknown } | null = null;
        if (options.stdin !== undefined) {
          feed(options.stdin, stream).catch((error: unknown) => {
            inputFailed = { error };
            controller.abort();
          });
        }
        const waited = container.wait({ abortSignal: controller.signal } as object) as Promise<{ StatusCode: number }>;
        let exitCode: number;
        try {
          exitCode = (await waited).StatusCode;
        } catch (error) {
          if (!controller.signal.aborted) throw error;
          killed = true;
          await container.kill().catch(() => undefined);
          exitCode = -1;
        }
        if (inputFailed !== null) throw (inputFailed as { error: unknown }).error;
        await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 2_000))]);
        stream.destroy();
        if (pending !== "") take("\n");
        return { exitCode, tail, killed };
      } finally {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        await call(`docker rm ${spec.name}`, d.heavy, (abortSignal) =>
          container.remove(signalled({ force: true, v: true }, abortSignal)),
        ).catch(() => undefined);
      }
    },

    async containerLogs(id, tail) {
      const info = await owned(id);
      const logs = await call(`docker logs ${name(info)}`, d.change, (abortSignal) =>
        docker.getContainer(info.Id).logs(signalled({ stdout: true, stderr: true, tail, follow: false as const }, abortSignal)),
      );
      return info.Config.Tty ? logs.toString("utf8") : demuxToText(logs);
    },

    async readArchive(id, path, sink, deadlineMs) {
      const info = await owned(id);
      await call(`docker cp ${name(info)}:${path}`, deadlineMs, async (abortSignal) => {
        const tar = await docker.getContainer(info.Id).getArchive(signalled({ path }, abortSignal));
        await pipeline(tar as Readable, sink, { signal: abortSignal });
      });
    },

    async writeArchive(id, path, tar, deadlineMs) {
      const info = await owned(id);
      await call(`docker cp into ${name(info)}:${path}`, deadlineMs, (abortSignal) =>
        docker.getContainer(info.Id).putArchive(tar, signalled({ path }, abortSignal)),
      );
    },
  };
  return api;
}

function name(info: Dockerode.ContainerInspectInfo): string {
  return info.Name.replace(/^\//, "");
}

function details(info: Dockerode.ContainerInspectInfo): ContainerDetails {
  const ports = (info.NetworkSettings?.Ports ?? {}) as Record<string, { HostIp: string; HostPort: string }[] | null>;
  return {
    id: info.Id,
    name: name(info),
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

/** The caller's label filter, always narrowed to Berth's own objects. */
function withManaged(filter: { label: string[] }): { label: string[] } {
  return { label: [...new Set([...MANAGED_FILTER.label, ...filter.label])] };
}

// The exec's stream can end a moment before the engine records the exit code.
async function exitCodeOf(exec: Dockerode.Exec, abortSignal: AbortSignal): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const state = await exec.inspect(signalled({}, abortSignal));
    if (!state.Running && state.ExitCode !== null) return state.ExitCode;
    if (attempt >= 50) return -1;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Pipes `source` into a hijacked socket's stdin, ending it at the source's end. An input that
 * failed before we got here, or closes without its end, fails; the process may exit before
 * reading everything (it failed): that is its exit code's story, not a reason to hang here.
 */
function feed(source: Readable, socket: Duplex): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (source.errored) {
      reject(source.errored);
      return;
    }
    source.once("error", reject);
    source.once("close", () => {
      if (!source.readableEnded) reject(source.errored ?? new Error("the input closed before its end"));
    });
    socket.once("close", () => resolve());
    source.once("end", () => resolve());
    source.pipe(socket, { end: true });
  });
}

interface BoundedSink {
  sink: Writable;
  text(): string;
}

function boundedSink(limit: number): BoundedSink {
  const chunks: Buffer[] = [];
  let size = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (size < limit) {
        const kept = chunk.subarray(0, limit - size);
        chunks.push(Buffer.from(kept));
        size += kept.length;
      }
      callback();
    },
  });
  return { sink, text: () => Buffer.concat(chunks).toString("utf8") };
}
