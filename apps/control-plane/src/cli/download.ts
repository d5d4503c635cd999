// A file streamed from a link to disk: never held in memory, written beside its place and
// renamed once whole and its SHA-256 matches what the API announced, with a progress line on
// a terminal.
import { createHash } from "node:crypto";
import { createWriteStream, renameSync, rmSync } from "node:fs";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { CliError, EXIT } from "./errors.ts";
import { USER_AGENT } from "./context.ts";

export interface Download {
  url: string;
  /** Where it goes. */
  file: string;
  /** The hex SHA-256 the bytes must have. */
  sha256: string;
  sizeBytes: number;
  /** Called with the bytes so far (about ten times a second), for a progress line. */
  progress?: (bytes: number, total: number) => void;
}

export async function downloadFile(d: Download): Promise<{ bytes: number; sha256: string }> {
  const res = await fetch(d.url, { headers: { "user-agent": USER_AGENT } });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => null)) as { error?: string; message?: string } | null;
    // The link itself is a credential: not printed.
    throw new CliError(`The download of ${d.file} was refused: ${body?.message ?? `HTTP ${res.status}`}${body?.error ? ` (${body.error})` : ""}`, EXIT.failed, body?.error ?? `http_${res.status}`);
  }
  const hash = createHash("sha256");
  let bytes = 0;
  let shown = 0;
  const count = new Transform({
    transform(chunk: Buffer, _enc, done) {
      hash.update(chunk);
      bytes += chunk.length;
      const now = Date.now();
      if (d.progress && now - shown >= 100) {
        shown = now;
        d.progress(bytes, d.sizeBytes);
      }
      done(null, chunk);
    },
  });
  const part = `${d.file}.part`;
  try {
    await pipeline(Readable.fromWeb(res.body as import("node:stream/web").ReadableStream), count, createWriteStream(part, { mode: 0o600 }));
  } catch (err) {
    rmSync(part, { force: true });
    throw err;
  }
  d.progress?.(bytes, d.sizeBytes);
  const sha256 = hash.digest("hex");
  if (sha256 !== d.sha256) {
    rmSync(part, { force: true });
    throw new CliError(`${d.file}: the downloaded bytes do not match the backup's checksum (got ${sha256}, expected ${d.sha256}); nothing kept.`, EXIT.failed, "checksum_mismatch");
  }
  renameSync(part, d.file);
  return { bytes, sha256 };
}
