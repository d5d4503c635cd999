// Volumes: Berth's own only (labels.ts) are listed, made and removed.
import { isNotFound } from "./docker-call.ts";
import { isManaged } from "./labels.ts";
import { OwnershipError, signalled, withManaged, type Labels, type WorkloadContext } from "./workload-context.ts";

export interface VolumeSummary {
  name: string;
  labels: Labels;
}

export interface VolumeCalls {
  findVolume(name: string): Promise<VolumeSummary | null>;
  createVolume(name: string, labels: Labels): Promise<VolumeSummary>;
  listVolumes(filter: { label: string[] }): Promise<VolumeSummary[]>;
  removeVolume(name: string): Promise<void>;
}

export function volumeCalls({ docker, d, call }: WorkloadContext): VolumeCalls {
  return {
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
  };
}
