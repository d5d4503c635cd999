// Splits the multiplexed output of a `docker exec` without a TTY: frames of
// [stream (1 stdout, 2 stderr), 0, 0, 0, size (4 bytes, big-endian)] + data. Unlike
// docker-modem's demuxStream this is a Transform, so a large stdout (a database dump) is
// written with backpressure instead of piling up in memory; stderr is kept, bounded.

import { Transform, type TransformCallback } from "node:stream";

const HEADER_BYTES = 8;

export class ExecDemux extends Transform {
  private header = Buffer.alloc(0);
  private remaining = 0;
  private stream = 0;
  private readonly stderrChunks: Buffer[] = [];
  private stderrBytes = 0;
  private readonly stderrLimit: number;

  /** `stderrLimit`: how many bytes of stderr to keep (the first ones). */
  constructor(stderrLimit = 64 * 1024) {
    super();
    this.stderrLimit = stderrLimit;
  }

  /** What the command wrote to stderr, up to the limit. */
  stderr(): string {
    return Buffer.concat(this.stderrChunks).toString("utf8");
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let rest = chunk;
    while (rest.length > 0) {
      if (this.remaining === 0) {
        const need = HEADER_BYTES - this.header.length;
        this.header = Buffer.concat([this.header, rest.subarray(0, need)]);
        rest = rest.subarray(need);
        if (this.header.length < HEADER_BYTES) break;
        this.stream = this.header[0] ?? 0;
        this.remaining = this.header.readUInt32BE(4);
        this.header = Buffer.alloc(0);
        continue;
      }
      const part = rest.subarray(0, this.remaining);
      rest = rest.subarray(part.length);
      this.remaining -= part.length;
      if (this.stream === 2) this.keepStderr(part);
      else this.push(part);
    }
    callback();
  }

  private keepStderr(part: Buffer): void {
    const room = this.stderrLimit - this.stderrBytes;
    if (room <= 0) return;
    const kept = part.subarray(0, room);
    this.stderrChunks.push(Buffer.from(kept));
    this.stderrBytes += kept.length;
  }
}

/** stdout and stderr of a multiplexed buffer (`docker logs` without a TTY), in order. */
export function demuxToText(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + HEADER_BYTES <= buffer.length) {
    const size = buffer.readUInt32BE(at + 4);
    parts.push(buffer.subarray(at + HEADER_BYTES, at + HEADER_BYTES + size));
    at += HEADER_BYTES + size;
  }
  return Buffer.concat(parts).toString("utf8");
}
