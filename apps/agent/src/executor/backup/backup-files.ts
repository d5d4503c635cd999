// A backup on disk: <stateDir>/backups/<env>/<backup_id>/{db.dump, filestore.tar.gz,
// manifest.json}. Files are hashed while they are written, the manifest lists size and
// sha256 of each, and a restore checks every file against it before touching anything.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { PassThrough, Transform, type Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { createGzip } from "node:zlib";
import { writeFileAtomic } from "../../state/atomic-write.ts";
import { SECRET_FILE_MODE } from "../../state/state-dir.ts";
import { CommandError } from "../runner/handler-types.ts";

export const DB_DUMP_FILE = "db.dump";
export const FILESTORE_FILE = "filestore.tar.gz";
export const MANIFEST_FILE = "manifest.json";
export const BACKUP_FORMAT = "berth-backup-1";
/** Present in a backup's folder once every file of it is in the control plane's backup store. */
export const STORED_MARKER = ".stored";

export interface BackupFile {
  name: string;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  backup_id: string;
  environment_id: string;
  created_at: string;
  database: { name: string; dump_format: "custom"; image: string };
  erp_image: string;
  files: BackupFile[];
}

export interface HashedSink {
  /** Write the content here. */
  input: Writable;
  /** Settles once the file is complete on disk. */
  done: Promise<BackupFile>;
}

/** A file (mode 0600: it holds the customer's data) hashed and measured as it is written, gzipped if asked. */
export function hashedFile(dir: string, name: string, options: { gzip?: boolean } = {}): HashedSink {
  const hash = createHash("sha256");
  let size = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      size += chunk.length;
      callback(null, chunk);
    },
  });
  const input = options.gzip === true ? createGzip() : new PassThrough();
  const file = createWriteStream(join(dir, name), { mode: SECRET_FILE_MODE, flags: "wx" });
  const done = pipeline(input, measure, file).then(() => ({ name, size, sha256: hash.digest("hex") }));
  // Observed by the caller through `done`; this keeps an early failure from being unhandled.
  done.catch(() => undefined);
  return { input, done };
}

export function writeManifest(dir: string, manifest: BackupManifest): void {
  writeFileAtomic(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, SECRET_FILE_MODE);
}

/** Reads the manifest and checks every file's size and sha256; refuses the backup on any difference. */
export async function verifyBackup(dir: string, backupId: string): Promise<BackupManifest> {
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, MANIFEST_FILE), "utf8")) as BackupManifest;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new CommandError("backup_not_found", `backup ${backupId} does not exist on this server (no ${MANIFEST_FILE})`);
    }
    throw new CommandError("backup_corrupted", `backup ${backupId}: ${MANIFEST_FILE} is unreadable: ${String(error)}`);
  }
  if (manifest.format !== BACKUP_FORMAT || !Array.isArray(manifest.files)) {
    throw new CommandError("backup_corrupted", `backup ${backupId}: ${MANIFEST_FILE} is not a ${BACKUP_FORMAT} manifest`);
  }
  if (!manifest.files.some((f) => f.name === DB_DUMP_FILE)) {
    throw new CommandError("backup_corrupted", `backup ${backupId}: the manifest lists no ${DB_DUMP_FILE}`);
  }
  for (const expected of manifest.files) {
    if (!/^[a-z0-9._-]+$/.test(expected.name)) {
      throw new CommandError("backup_corrupted", `backup ${backupId}: the manifest names an invalid file "${expected.name}"`);
    }
    const actual = await hashOf(join(dir, expected.name)).catch(() => null);
    if (actual === null) {
      throw new CommandError("backup_corrupted", `backup ${backupId}: ${expected.name} is missing; refusing to restore`);
    }
    if (actual.size !== expected.size || actual.sha256 !== expected.sha256) {
      throw new CommandError(
        "backup_corrupted",
        `backup ${backupId}: ${expected.name} does not match its manifest (sha256 ${actual.sha256.slice(0, 16)}…, ` +
          `${actual.size} bytes; expected ${expected.sha256.slice(0, 16)}…, ${expected.size} bytes): refusing to restore`,
      );
    }
  }
  return manifest;
}

/** Size and SHA-256 of a file of the backup folder, as a manifest or an upload declares it. */
export async function fileSum(dir: string, name: string): Promise<BackupFile> {
  return { name, ...(await hashOf(join(dir, name))) };
}

/** Marks the backup as safe in the control plane's store: local retention may remove it. */
export async function markStored(dir: string): Promise<void> {
  await writeFile(join(dir, STORED_MARKER), "", { mode: SECRET_FILE_MODE });
}

/**
 * Keeps the newest `keep` backups of the environment on this server among those that are
 * safe in the control plane's store, and removes the older ones: the store has every one,
 * and a restore fetches what is not here. Backups the store does not have (made without
 * one, or before it) and pre-deploy snapshots (their own retention) are never touched.
 */
export async function pruneStoredBackups(backupsDir: string, keep: number): Promise<{ backup_id: string; created_at: string }[]> {
  const stored: { backup_id: string; created_at: string }[] = [];
  for (const entry of await readdir(backupsDir).catch(() => [] as string[])) {
    const dir = join(backupsDir, entry);
    if (!(await stat(join(dir, STORED_MARKER)).then(() => true, () => false))) continue;
    try {
      const manifest = JSON.parse(await readFile(join(dir, MANIFEST_FILE), "utf8")) as Partial<BackupManifest>;
      if (manifest.format === BACKUP_FORMAT && manifest.backup_id === entry && typeof manifest.created_at === "string") {
        stored.push({ backup_id: entry, created_at: manifest.created_at });
      }
    } catch {
      // Not a backup's folder.
    }
  }
  stored.sort((a, b) => b.created_at.localeCompare(a.created_at));
  const removed = stored.slice(keep);
  for (const old of removed) await rm(join(backupsDir, old.backup_id), { recursive: true, force: true });
  return removed;
}

async function hashOf(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest("hex") };
}
