// `docker cp`, both ways, on Berth's containers, running or stopped.
import type { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { containerName, signalled, type WorkloadContext } from "./workload-context.ts";

export interface ArchiveCalls {
  /** `docker cp` out: a tar of `path` into `sink`; works on stopped containers too. */
  readArchive(id: string, path: string, sink: Writable, deadlineMs: number): Promise<void>;
  /** `docker cp` in: extracts a tar into `path`, keeping its owners; works on stopped containers too. */
  writeArchive(id: string, path: string, tar: Readable, deadlineMs: number): Promise<void>;
}

export function archiveCalls({ docker, call, owned }: WorkloadContext): ArchiveCalls {
  return {
    async readArchive(id, path, sink, deadlineMs) {
      const info = await owned(id);
      await call(`docker cp ${containerName(info)}:${path}`, deadlineMs, async (abortSignal) => {
        const tar = await docker.getContainer(info.Id).getArchive(signalled({ path }, abortSignal));
        await pipeline(tar as Readable, sink, { signal: abortSignal });
      });
    },

    async writeArchive(id, path, tar, deadlineMs) {
      const info = await owned(id);
      await call(`docker cp into ${containerName(info)}:${path}`, deadlineMs, (abortSignal) =>
        docker.getContainer(info.Id).putArchive(tar, signalled({ path }, abortSignal)),
      );
    },
  };
}
