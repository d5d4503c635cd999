// Images: whether one is here, its id, a pull (workloads.ts composes the kinds).
import { isNotFound } from "./docker-call.ts";
import type { WorkloadContext } from "./workload-context.ts";

export interface ImageCalls {
  imageExists(ref: string): Promise<boolean>;
  /** The image's id ("sha256:…"), null when it is not present locally. */
  imageId(ref: string): Promise<string | null>;
  pullImage(ref: string): Promise<void>;
}

export function imageCalls({ docker, d, call }: WorkloadContext): ImageCalls {
  return {
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
  };
}
