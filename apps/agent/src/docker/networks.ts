// Networks: Berth's own only (labels.ts) are listed, made, removed, and have Berth's
// containers attached or detached.
import { isNotFound } from "./docker-call.ts";
import { isManaged } from "./labels.ts";
import { containerName, OwnershipError, signalled, withManaged, type Labels, type WorkloadContext } from "./workload-context.ts";

export interface NetworkSummary {
  id: string;
  name: string;
  labels: Labels;
  /** The bridge's address on this host (findNetwork only; undefined when Docker gave none). */
  gateway?: string;
}

export interface NetworkCalls {
  findNetwork(name: string): Promise<NetworkSummary | null>;
  createNetwork(name: string, labels: Labels): Promise<NetworkSummary>;
  /** Berth's networks matching the label filter. */
  listNetworks(filter: { label: string[] }): Promise<NetworkSummary[]>;
  removeNetwork(idOrName: string): Promise<void>;
  /** Attaches a Berth container to a Berth network; attached already is success. */
  connectNetwork(network: string, containerId: string): Promise<void>;
  /** Detaches it; not attached (or the network gone) is success. */
  disconnectNetwork(network: string, containerId: string): Promise<void>;
}

export function networkCalls({ docker, d, call, owned, inspectNetwork }: WorkloadContext): NetworkCalls {
  return {
    async findNetwork(name) {
      try {
        const info = await inspectNetwork(name);
        const gateway = info.IPAM?.Config?.find((c) => typeof c.Gateway === "string" && c.Gateway !== "")?.Gateway;
        return { id: info.Id, name: info.Name, labels: info.Labels ?? {}, ...(gateway === undefined ? {} : { gateway }) };
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

    async connectNetwork(network, containerId) {
      const info = await owned(containerId);
      const net = await inspectNetwork(network);
      if (!isManaged(net.Labels)) throw new OwnershipError(`network ${net.Name}`);
      if (Object.keys(info.NetworkSettings?.Networks ?? {}).includes(net.Name)) return;
      await call(`docker network connect ${net.Name} ${containerName(info)}`, d.change, () =>
        docker.getNetwork(net.Id).connect({ Container: info.Id }),
      ).catch((error: unknown) => {
        // Attached meanwhile (a concurrent connect): what was asked for.
        if (!/already exists|already attached/i.test(String(error))) throw error;
      });
    },

    async disconnectNetwork(network, containerId) {
      const info = await owned(containerId);
      if (!Object.keys(info.NetworkSettings?.Networks ?? {}).includes(network)) return;
      await call(`docker network disconnect ${network} ${containerName(info)}`, d.change, () =>
        docker.getNetwork(network).disconnect({ Container: info.Id, Force: true }),
      ).catch((error: unknown) => {
        if (!isNotFound(error) && !/is not connected/i.test(String(error))) throw error;
      });
    },
  };
}
