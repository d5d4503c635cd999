// A tar or tar.gz backup read as one stream, member after member (tar has no index): the
// caller sees each member's name and size and either reads its bytes or lets them pass.
// Gzip output is counted against the compressed input, so a gzip bomb stops early.
import type { Readable } from "node:stream";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import tar from "tar-stream";
import { BackupAnalysisError } from "./analysis-types.ts";
import { isUnsafeMemberName, normalizeMemberName } from "./member-names.ts";
import type { InflateLimits } from "./analysis-limits.ts";
import { tooManyMembers } from "./zip-archive.ts";

export interface TarMember {
  name: string;
  size: number;
}

/**
 * Streams every regular member of the tar in `input` to `onMember`, which returns a promise
 * that settles once it has consumed (or drained) the member's stream. Unsafe names are
 * reported through `onUnsafe` and drained unread; links, folders and devices are drained
 * unread. More than limits.maxMembers entries: archive_too_many_members.
 */
export async function walkTar(
  input: Readable,
  gzipped: boolean,
  limits: InflateLimits,
  onMember: (member: TarMember, body: Readable) => Promise<void>,
  onUnsafe: (name: string) => void,
  signal?: AbortSignal,
): Promise<void> {
  const extract = tar.extract();
  let entries = 0;
  extract.on("entry", (header, body, next) => {
    entries++;
    const done = (err?: unknown) => (err ? extract.destroy(err as Error) : next());
    // tar has no index: the count is known as the headers pass; past the limit the walk stops.
    if (entries > limits.maxMembers) return done(tooManyMembers(gzipped ? "tar.gz" : "tar", limits.maxMembers));
    const drain = () => {
      body.on("end", () => done());
      body.resume();
    };
    if (header.type !== "file" && header.type !== "contiguous-file") return drain();
    if (isUnsafeMemberName(header.name)) {
      onUnsafe(header.name);
      return drain();
    }
    onMember({ name: normalizeMemberName(header.name), size: header.size ?? 0 }, body as unknown as Readable).then(
      () => done(),
      (err: unknown) => done(err),
    );
  });
  const stages: (NodeJS.ReadableStream | NodeJS.WritableStream)[] = [input];
  if (gzipped) {
    let compressed = 0;
    let inflated = 0;
    stages.push(
      new Transform({
        transform(chunk: Buffer, _e, cb) {
          compressed += chunk.length;
          cb(null, chunk);
        },
      }),
      createGunzip({ chunkSize: 256 << 10 }),
      new Transform({
        readableHighWaterMark: 1 << 20,
        transform(chunk: Buffer, _e, cb) {
          inflated += chunk.length;
          if (inflated > limits.maxMemberBytes || (inflated > 64 << 20 && inflated > compressed * limits.maxRatio)) {
            cb(new BackupAnalysisError("archive_too_large", `not a backup: the gzip stream expands from ${compressed} to more than ${inflated} bytes (a gzip bomb?)`));
          } else cb(null, chunk);
        },
      }),
    );
  }
  stages.push(extract);
  try {
    await pipeline(stages as unknown as [Readable, NodeJS.WritableStream], { signal });
  } catch (err) {
    if (err instanceof BackupAnalysisError || (err as Error).name === "AbortError") throw err;
    const message = (err as Error).message;
    const truncated = /unexpected end|unexpected eof/i.test(message);
    if (entries === 0 && gzipped && !truncated) {
      throw new BackupAnalysisError(
        "not_a_backup",
        "not a backup: the gzip file does not hold a tar archive (a compressed SQL dump? upload dump.sql as is, or inside a zip or tar.gz)",
      );
    }
    throw new BackupAnalysisError(
      "corrupt_archive",
      truncated ? `not a backup: the ${gzipped ? "tar.gz" : "tar"} archive is truncated (${message})` : `not a backup: the ${gzipped ? "tar.gz" : "tar"} archive is damaged (${message})`,
    );
  }
}
