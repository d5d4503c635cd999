// An ERP backup as the vendor's database manager, its hosting or an on-premise server makes it
// (ERP-FACTS.md): a zip (dump.sql written first, manifest.json, filestore/<2 hex>/<sha1>), a
// tar or tar.gz holding a dump (and perhaps a filestore/ folder), or a bare dump: plain SQL,
// or pg_dump's custom format (-Fc, "PGDMP..."; in an archive, dump.dump or another *.dump).
// Read from a local file and streamed, never extracted to disk: the dump goes to its loader, the
// file store becomes a tar stream for the new data dir. The format comes from the content.
import { open as openFile } from "node:fs/promises";
import { createReadStream } from "node:fs";
import { PassThrough, Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGunzip } from "node:zlib";
import { extract, pack } from "tar-stream";
import yauzl from "yauzl";
import { dumpMemberRank, normalizeMemberName, zipDumpMember } from "@berth/protocol";
import { CommandError } from "../runner/handler-types.ts";
import { CUSTOM_DUMP_MAGIC } from "../environment/custom-dump.ts";
import type { ErpUser } from "../environment/erp-image-user.ts";

/** "custom": a bare custom-format dump (pg_dump -Fc). */
export type ErpArchiveFormat = "zip" | "tar" | "tar.gz" | "sql" | "custom";

/** A file store member: filestore/<one or more safe segments>, at most four deep. */
const FILESTORE_MEMBER = /^(?:[^/]+\/)?filestore\/((?:[A-Za-z0-9._-]+\/){0,3}[A-Za-z0-9._-]+)$/;

/** The format of `file` by its first bytes. */
export async function detectArchiveFormat(file: string): Promise<ErpArchiveFormat> {
  const handle = await openFile(file, "r");
  try {
    const head = Buffer.alloc(512);
    const { bytesRead } = await handle.read(head, 0, 512, 0);
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0x04034b50) return "zip";
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return "tar.gz";
    if (bytesRead >= 262 && head.toString("latin1", 257, 262) === "ustar") return "tar";
    if (head.toString("latin1", 0, CUSTOM_DUMP_MAGIC.length) === CUSTOM_DUMP_MAGIC) return "custom";
    const text = head.toString("utf8", 0, bytesRead);
    if (/^(?:--|SET |\\restrict |CREATE |BEGIN|SELECT )/m.test(text)) return "sql";
    throw new CommandError("archive_unreadable", "the backup is neither a zip, a tar, a tar.gz, a SQL dump nor a custom-format dump (pg_dump -Fc)");
  } finally {
    await handle.close();
  }
}

/** A file of the archive's file store: its path under the store (e.g. "ab/ab12…"), size and bytes. */
export interface FileStoreEntry {
  path: string;
  size: number;
  stream: Readable;
}

/**
 * Reads the archive once, in order: the dump to `onDump` (which must consume it) and each file
 * store member to `onFile`. A zip is read through its central directory, a tar as a stream.
 */
export async function readErpArchive(
  file: string,
  handlers: { onDump(dump: Readable, name: string): Promise<void>; onFile(entry: FileStoreEntry): Promise<void> },
): Promise<{ format: ErpArchiveFormat; dump: string; files: number }> {
  const format = await detectArchiveFormat(file);
  if (format === "sql" || format === "custom") {
    await handlers.onDump(createReadStream(file), "(the file itself)");
    return { format, dump: "(the file itself)", files: 0 };
  }
  const seen = format === "zip" ? await readZip(file, handlers) : await readTar(file, format, handlers);
  if (seen.dump === null) throw new CommandError("archive_no_dump", "no database dump found in the backup (a dump.sql or another .sql or .dump file)");
  return { format, dump: seen.dump, files: seen.files };
}

type Handlers = Parameters<typeof readErpArchive>[1];

async function readZip(file: string, handlers: Handlers): Promise<{ dump: string | null; files: number }> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true }, (error, z) => (error ? reject(error) : resolve(z))),
  ).catch((error: unknown) => {
    throw new CommandError("archive_unreadable", `the zip cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  });
  let files = 0;
  try {
    // The central directory first: the dump is chosen among every member's name, as the
    // control plane's analysis chose it (@berth/protocol's zipDumpMember), then read in order.
    const entries = await new Promise<yauzl.Entry[]>((resolve, reject) => {
      const all: yauzl.Entry[] = [];
      zip.on("error", reject);
      zip.on("end", () => resolve(all));
      zip.on("entry", (entry: yauzl.Entry) => {
        if (!entry.fileName.endsWith("/")) all.push(entry);
        zip.readEntry();
      });
      zip.readEntry();
    });
    const dump = zipDumpMember(entries.map((e) => normalizeMemberName(e.fileName)));
    for (const entry of entries) {
      const name = normalizeMemberName(entry.fileName);
      const store = FILESTORE_MEMBER.exec(name);
      const isDump = name === dump;
      if (!store && !isDump) continue;
      const stream = await new Promise<Readable>((res, rej) => zip.openReadStream(entry, (error, s) => (error ? rej(error) : res(s))));
      if (isDump) await handlers.onDump(stream, name);
      else {
        files++;
        await handlers.onFile({ path: store![1]!, size: entry.uncompressedSize, stream });
      }
    }
    return { dump, files };
  } catch (error) {
    if (error instanceof CommandError) throw error;
    throw new CommandError("archive_unreadable", `the zip cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    zip.close();
  }
}

async function readTar(file: string, format: "tar" | "tar.gz", handlers: Handlers): Promise<{ dump: string | null; files: number }> {
  let dump: string | null = null;
  let files = 0;
  const tar = extract();
  tar.on("entry", (header, stream, next) => {
    const name = normalizeMemberName(header.name);
    const handle = async () => {
      const store = header.type === "file" ? FILESTORE_MEMBER.exec(name) : null;
      // A stream: the first member the shared rule takes is the dump, as the analysis read it.
      const isDump = header.type === "file" && dump === null && dumpMemberRank(name) !== null;
      if (isDump) {
        dump = name;
        await handlers.onDump(stream, name);
      } else if (store) {
        files++;
        await handlers.onFile({ path: store[1]!, size: header.size ?? 0, stream });
      } else {
        stream.resume();
        await new Promise((r) => stream.on("end", r));
      }
    };
    handle().then(() => next(), (error: unknown) => next(error as Error));
  });
  const source = createReadStream(file);
  try {
    await (format === "tar.gz" ? pipeline(source, createGunzip(), tar) : pipeline(source, tar));
  } catch (error) {
    if (error instanceof CommandError) throw error;
    throw new CommandError("archive_unreadable", `the ${format} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
  return { dump, files };
}

/**
 * A tar stream of file store entries under `prefix` (e.g. "filestore/odoo/"), fed by `add`
 * and ended by `finish`: what Docker's archive upload takes to write them. Every file and
 * folder (each folder once, before its first file) belongs to `uid`, so the ERP can add files.
 */
export function fileStoreTar(prefix: string, { uid, gid }: ErpUser) {
  const tar = pack();
  const out = new PassThrough();
  tar.pipe(out);
  const folders = new Set<string>();
  const folder = (name: string) =>
    new Promise<void>((resolve, reject) => {
      tar.entry({ name, type: "directory", mode: 0o750, uid, gid }, (error) => (error ? reject(error) : resolve()));
    });
  return {
    stream: out as Readable,
    async add(entry: FileStoreEntry): Promise<void> {
      const name = `${prefix}${entry.path}`;
      const parts = name.split("/").slice(0, -1);
      for (let i = 1; i <= parts.length; i++) {
        const dir = `${parts.slice(0, i).join("/")}/`;
        if (!folders.has(dir)) {
          folders.add(dir);
          await folder(dir);
        }
      }
      await new Promise<void>((resolve, reject) => {
        const sink = tar.entry({ name, size: entry.size, mode: 0o640, uid, gid }, (error) => (error ? reject(error) : resolve()));
        entry.stream.on("error", reject);
        entry.stream.pipe(sink);
      });
    },
    finish(): void {
      tar.finalize();
    },
  };
}
