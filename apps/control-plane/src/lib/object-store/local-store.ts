// The object store as a folder on the control plane's disk (BERTH_BACKUP_DIR, by default
// <data dir>/backups). A put writes a temporary file beside the target, fsyncs it, checks
// what was declared, then renames it into place and fsyncs the folder: an object that exists
// is a whole one, and a crash leaves at most a *.partial file that the next put of the same
// key replaces.
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, open, rename, rm, rmdir, stat, type FileHandle } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { checkExpected, checkKey, measuring, ObjectStoreError, type ObjectStore } from "./object-store.ts";

const WRITE_BATCH = 1 << 20;

async function writeAll(handle: FileHandle, buffer: Buffer): Promise<void> {
  for (let offset = 0; offset < buffer.length; ) {
    offset += (await handle.write(buffer, offset, buffer.length - offset)).bytesWritten;
  }
}

export function createLocalObjectStore(root: string): ObjectStore {
  const base = path.resolve(root);
  const fileOf = (key: string) => path.join(base, ...checkKey(key).split("/"));

  async function syncDir(dir: string): Promise<void> {
    const handle = await open(dir, "r").catch(() => null);
    if (!handle) return;
    await handle.sync().catch(() => undefined);
    await handle.close();
  }

  return {
    kind: "local",
    location: base,

    async put(key, body, options = {}) {
      const file = fileOf(key);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      const temp = `${file}.${randomBytes(6).toString("hex")}.partial`;
      const handle = await open(temp, "wx", 0o600);
      try {
        const measure = measuring(options.expect?.size_bytes);
        await pipeline(body, measure, async (source: AsyncIterable<Buffer>) => {
          // Network chunks are small (16-64 KiB): gathered into writes of about 1 MiB.
          let batch: Buffer[] = [];
          let bytes = 0;
          for await (const chunk of source) {
            batch.push(chunk);
            bytes += chunk.length;
            if (bytes >= WRITE_BATCH) {
              await writeAll(handle, Buffer.concat(batch, bytes));
              batch = [];
              bytes = 0;
            }
          }
          if (bytes > 0) await writeAll(handle, Buffer.concat(batch, bytes));
        });
        await handle.sync();
        await handle.close();
        const got = measure.result();
        checkExpected(key, got, options.expect);
        await rename(temp, file);
        await syncDir(path.dirname(file));
        return got;
      } catch (error) {
        await handle.close().catch(() => undefined);
        await rm(temp, { force: true });
        throw error;
      }
    },

    async get(key, options = {}) {
      const file = fileOf(key);
      const info = await stat(file).catch(() => null);
      if (!info?.isFile()) throw new ObjectStoreError("object_not_found", `no object ${key}`);
      const range = options.range;
      return createReadStream(file, { highWaterMark: 1 << 20, ...(range ? { start: range.start, end: range.end } : {}) });
    },

    async head(key) {
      const info = await stat(fileOf(key)).catch(() => null);
      return info?.isFile() ? { size_bytes: info.size, modified_at: info.mtime } : null;
    },

    async delete(key) {
      const file = fileOf(key);
      await rm(file, { force: true });
      // Empty folders up to the root go too (a backup's folder, its environment's, ...).
      for (let dir = path.dirname(file); dir.startsWith(base + path.sep); dir = path.dirname(dir)) {
        if (!(await rmdir(dir).then(() => true, () => false))) break;
      }
    },
  };
}
