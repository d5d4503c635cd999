// Folders the control plane writes to, checked at start: a folder it cannot use stops the
// start with the folder, the reason and the fix, instead of failing later in the middle of
// a backup or an upload.
import { accessSync, constants, statSync, type Stats } from "node:fs";
import path from "node:path";

/** The folder itself when it exists, else its nearest existing ancestor (which mkdir -p would write in), with its stat. */
export function nearestExisting(dir: string): { dir: string; stat: Stats } | { dir: string; notADirectory: true } {
  let current = path.resolve(dir);
  for (;;) {
    let stat: Stats | undefined;
    try {
      stat = statSync(current);
    } catch {
      stat = undefined;
    }
    if (stat !== undefined) return stat.isDirectory() ? { dir: current, stat } : { dir: current, notADirectory: true };
    const parent = path.dirname(current);
    if (parent === current) return { dir: current, notADirectory: true };
    current = parent;
  }
}

/**
 * Why this process cannot create or write in `dir` (named by `setting`), or null: the folder,
 * or the folder it would be created in, must be one this process can enter and write.
 */
export function writableDirectoryProblem(setting: string, dir: string): string | null {
  const found = nearestExisting(dir);
  if ("notADirectory" in found) return `${setting}: ${dir} cannot be a folder, ${found.dir} is a file: set ${setting} to a folder`;
  try {
    accessSync(found.dir, constants.W_OK | constants.X_OK);
    return null;
  } catch {
    const what = found.dir === path.resolve(dir) ? dir : `${found.dir}, where ${dir} would be created,`;
    return `${setting}: ${what} is not writable by this process (owner uid ${found.stat.uid}, mode ${modeText(found.stat)}): make it writable (chown or chmod), or set ${setting} to another folder`;
  }
}

export function modeText(stat: Stats): string {
  return `0${(stat.mode & 0o777).toString(8).padStart(3, "0")}`;
}
