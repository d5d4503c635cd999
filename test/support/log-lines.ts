// A destination for a test control plane's logger that keeps every line written, so a test
// can read what the logs hold.
import { Writable } from "node:stream";

export function logLines(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(...chunk.toString("utf8").split("\n").filter((l) => l !== ""));
      done();
    },
  });
  return { stream, lines };
}
