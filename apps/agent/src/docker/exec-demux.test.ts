// The exec output demultiplexer: frames split anywhere across chunks, stderr kept apart.
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { describe, expect, it } from "vitest";
import { demuxToText, ExecDemux } from "./exec-demux.ts";

function frame(stream: 1 | 2, data: string): Buffer {
  const body = Buffer.from(data);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

describe("ExecDemux", () => {
  it("passes stdout through and keeps stderr, whatever the chunk boundaries", async () => {
    const all = Buffer.concat([frame(1, "hello "), frame(2, "warn\n"), frame(1, ""), frame(1, "world"), frame(2, "more")]);
    for (const size of [1, 3, 7, 8, 9, all.length]) {
      const chunks: Buffer[] = [];
      for (let at = 0; at < all.length; at += size) chunks.push(all.subarray(at, at + size));
      const demux = new ExecDemux();
      const out = await text(Readable.from(chunks).pipe(demux));
      expect(out).toBe("hello world");
      expect(demux.stderr()).toBe("warn\nmore");
    }
  });

  it("keeps only the first bytes of a long stderr", async () => {
    const demux = new ExecDemux(4);
    await text(Readable.from([frame(2, "abcdef"), frame(2, "gh")]).pipe(demux));
    expect(demux.stderr()).toBe("abcd");
  });

  it("turns a multiplexed log buffer into text", () => {
    expect(demuxToText(Buffer.concat([frame(1, "a\n"), frame(2, "b\n")]))).toBe("a\nb\n");
  });
});
