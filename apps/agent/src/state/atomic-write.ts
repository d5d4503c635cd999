// Whole-file writes that a crash cannot leave half done: write a temporary file beside the
// target, fsync it, rename it over the target, fsync the directory.
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * `durable: false` skips the fsyncs: still atomic (never half written), but a power cut may
 * bring back the previous version. Right for files rewritten often that matter little.
 */
export function writeFileAtomic(path: string, content: string, mode: number, options: { durable?: boolean } = {}): void {
  const durable = options.durable ?? true;
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  // Created with its final mode, so the content is never readable by others, even briefly.
  const fd = openSync(temp, "wx", mode);
  try {
    writeSync(fd, content);
    if (durable) fsyncSync(fd);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  if (durable) syncDirectory(dirname(path));
}

// Makes the rename itself durable; some filesystems refuse to fsync a directory, which
// only weakens durability, so that is not an error.
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // See above.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
