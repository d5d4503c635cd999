// What the upload benchmarks (bench:backup-upload, bench:migrations-upload) share: the file
// they send, and the baseline they measure against in the same run, a bare node:http server
// that writes a PUT body to a file and fsyncs it, fed by a bare node:http client.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { open, rm } from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { pipeline } from "node:stream/promises";

/** N MiB of incompressible bytes (a random 4 MiB block, each copy with its own first bytes) in `file`; returns its sha256. */
export async function makeFile(file: string, mb: number): Promise<string> {
  const block = randomBytes(4 << 20);
  const hash = createHash("sha256");
  const out = createWriteStream(file);
  for (let written = 0; written < mb << 20; written += block.length) {
    const chunk = block.subarray(0, Math.min(block.length, (mb << 20) - written));
    chunk.writeUInt32BE(written / block.length, 0);
    hash.update(chunk);
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return hash.digest("hex");
}

export async function fsyncFile(file: string): Promise<void> {
  const h = await open(file, "r+");
  await h.sync();
  await h.close();
}

/** The baseline server: PUT body to a file in `dir`, fsync, remove, 200. */
export function rawServer(dir: string): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const file = path.join(dir, `raw-${randomUUID()}`);
    pipeline(req, createWriteStream(file, { highWaterMark: 1 << 20 }))
      .then(() => fsyncFile(file))
      .then(() => rm(file, { force: true }))
      .then(
        () => res.end("ok"),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ port: (server.address() as { port: number }).port, close: () => new Promise<void>((r) => server.close(() => r())) }),
    ),
  );
}

/** The baseline client: the whole file PUT to the raw server. */
export function rawPut(port: number, file: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method: "PUT", path: "/", headers: { "content-length": size } }, (res) => {
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`raw PUT answered ${res.statusCode}`))));
    });
    req.on("error", reject);
    pipeline(createReadStream(file, { highWaterMark: 1 << 20 }), req).catch(reject);
  });
}
