// Both object stores through the same cases: the local one in a temp folder, the S3 one
// against s3rver (a fake S3 started here on 127.0.0.1) with parts small enough that a few
// megabytes make a real multipart upload.
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import S3rver from "s3rver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalObjectStore } from "./local-store.ts";
import { ObjectStoreError, type ObjectStore } from "./object-store.ts";
import { createS3ObjectStore } from "./s3-store.ts";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
/** A stream of `data` in chunks of 64 KiB, as an HTTP body arrives. */
const chunks = (data: Buffer) => Readable.from((function* () {
  for (let i = 0; i < data.length; i += 65536) yield data.subarray(i, i + 65536);
})());
async function read(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(Buffer.from(c as Buffer));
  return Buffer.concat(parts);
}

let tmp: string;
let s3: S3rver;
const stores: { name: string; store: () => ObjectStore }[] = [];
let local: ObjectStore;
let bucket: ObjectStore;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "berth-object-store-"));
  s3 = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: path.join(tmp, "s3rver"), configureBuckets: [{ name: "berth-backups" }] });
  const { port } = await s3.run();
  local = createLocalObjectStore(path.join(tmp, "local"));
  bucket = createS3ObjectStore({
    bucket: "berth-backups",
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    prefix: "test/",
    partSize: 5 * 1024 * 1024,
  });
});

afterAll(async () => {
  await s3?.close();
  await rm(tmp, { recursive: true, force: true });
});

stores.push({ name: "local", store: () => local }, { name: "s3 (s3rver)", store: () => bucket });

describe.each(stores)("$name object store", ({ store: of }) => {
  // 12 MiB and a bit: three parts of 5 MiB for the S3 store.
  const data = randomBytes(12 * 1024 * 1024 + 123);

  it("stores a stream and reports its size and sha256; reads it back whole and by range", async () => {
    const store = of();
    const stored = await store.put("backups/org/env/b1/db.dump", chunks(data));
    expect(stored).toEqual({ size_bytes: data.length, sha256: sha(data) });
    expect((await store.head("backups/org/env/b1/db.dump"))?.size_bytes).toBe(data.length);
    expect(sha(await read(await store.get("backups/org/env/b1/db.dump")))).toBe(sha(data));
    const part = await read(await store.get("backups/org/env/b1/db.dump", { range: { start: 5_000_000, end: 5_000_099 } }));
    expect(part.equals(data.subarray(5_000_000, 5_000_100))).toBe(true);
  }, 60_000);

  it("keeps an object whose size and digest are what was declared", async () => {
    const store = of();
    const small = randomBytes(1000);
    await expect(store.put("backups/org/env/b2/x", chunks(small), { expect: { size_bytes: 1000, sha256: sha(small) } })).resolves.toEqual({ size_bytes: 1000, sha256: sha(small) });
  });

  it("refuses and removes an object whose digest differs from the declared one", async () => {
    const store = of();
    const small = randomBytes(1000);
    const put = store.put("backups/org/env/b3/x", chunks(small), { expect: { size_bytes: 1000, sha256: sha(Buffer.from("other")) } });
    await expect(put).rejects.toMatchObject({ code: "object_mismatch" });
    expect(await store.head("backups/org/env/b3/x")).toBeNull();
  });

  it("stops a put that sends more than it declared, and one that sends less; nothing stays", async () => {
    const store = of();
    await expect(store.put("backups/org/env/b4/x", chunks(data), { expect: { size_bytes: 1000, sha256: sha(data) } })).rejects.toMatchObject({ code: "object_mismatch" });
    expect(await store.head("backups/org/env/b4/x")).toBeNull();
    const small = randomBytes(500);
    await expect(store.put("backups/org/env/b4/y", chunks(small), { expect: { size_bytes: 1000, sha256: sha(small) } })).rejects.toMatchObject({ code: "object_mismatch" });
    expect(await store.head("backups/org/env/b4/y")).toBeNull();
  }, 60_000);

  it("a source that fails midway stores nothing", async () => {
    const store = of();
    const failing = Readable.from((async function* () {
      yield randomBytes(100_000);
      throw new Error("connection reset");
    })());
    await expect(store.put("backups/org/env/b5/x", failing)).rejects.toThrow(/connection reset/);
    expect(await store.head("backups/org/env/b5/x")).toBeNull();
  });

  it("deletes (twice is no error); a missing object is object_not_found; bad keys are refused", async () => {
    const store = of();
    await store.put("backups/org/env/b6/x", chunks(Buffer.from("hello")));
    await store.delete("backups/org/env/b6/x");
    await store.delete("backups/org/env/b6/x");
    expect(await store.head("backups/org/env/b6/x")).toBeNull();
    await expect(store.get("backups/org/env/b6/x")).rejects.toMatchObject({ code: "object_not_found" });
    for (const key of ["../escape", "a//b", "/abs", "a/./b", "a/../b", ""]) {
      await expect(store.put(key, chunks(Buffer.from("x")))).rejects.toBeInstanceOf(ObjectStoreError);
    }
  });
});

it("the local store leaves no temporary file behind and removes emptied folders", async () => {
  const files = async (dir: string): Promise<string[]> =>
    (await readdir(dir, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => e.name);
  const root = path.join(tmp, "local");
  expect((await files(root)).filter((n) => n.endsWith(".partial"))).toEqual([]);
  await local.put("backups/o/e/only/x", chunks(Buffer.from("x")));
  await local.delete("backups/o/e/only/x");
  await expect(readdir(path.join(root, "backups", "o"))).rejects.toMatchObject({ code: "ENOENT" });
});
