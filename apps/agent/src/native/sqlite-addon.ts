// better-sqlite3's native addon. From source, better-sqlite3 finds its own build in
// node_modules. In the single executable it travels as an asset, and a shared object can only
// be loaded from a file:
// - Kept in the state directory under its SHA-256 (embedded in the executable by the build),
//   written by `enroll` and verified before every load. Reading the asset maps its ~2 MB of
//   the executable into the process for good, so a daemon that finds the file never reads it.
// - Where that is not possible (an older build without the digest, a state directory on a
//   noexec mount), the asset is written to a fresh private directory, loaded, and the file
//   removed again at once (the loaded mapping stays valid on Linux).
import { createHash } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { seaAssets } from "./sea.ts";

export const SQLITE_ASSET = "better_sqlite3.node";
/** Set by installers/build (esbuild define): the asset's SHA-256 in hex. */
declare const __BERTH_SQLITE_ADDON_SHA256__: string | undefined;
const ASSET_SHA256 = typeof __BERTH_SQLITE_ADDON_SHA256__ === "string" ? __BERTH_SQLITE_ADDON_SHA256__ : null;
const KEPT_PREFIX = ".sqlite-addon-";

let addon: object | null | undefined;

/** The file name the executable keeps its addon under in `dir`, or null without a digest. */
export function keptAddonPath(dir: string, sha256: string | null = ASSET_SHA256): string | null {
  return sha256 === null ? null : join(dir, `${KEPT_PREFIX}${sha256.slice(0, 32)}.node`);
}

/** The file's SHA-256, read in small chunks (a 2 MB buffer would stay in malloc's heap). */
function sha256Of(file: string): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(file, "r");
    const hash = createHash("sha256");
    const chunk = Buffer.allocUnsafe(64 * 1024);
    for (let n = readSync(fd, chunk); n > 0; n = readSync(fd, chunk)) hash.update(chunk.subarray(0, n));
    return hash.digest("hex");
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Writes the executable's addon into `dir` under its digest unless a verified copy is there,
 * and removes copies of other versions. Returns the file, or null when running from source
 * or from a build without the digest. Throws when `dir` cannot be written.
 */
export function keepSqliteAddon(dir: string): string | null {
  const sea = seaAssets();
  const file = keptAddonPath(dir);
  if (sea === null || file === null) return null;
  if (sha256Of(file) !== ASSET_SHA256) {
    // Written aside and renamed: a daemon starting meanwhile sees the old file or the whole new one.
    const tmp = `${file}.${process.pid}.tmp`;
    rmSync(tmp, { force: true });
    writeFileSync(tmp, new Uint8Array(sea.getRawAsset(SQLITE_ASSET)), { mode: 0o500 });
    renameSync(tmp, file);
  }
  for (const name of readdirSync(dir)) {
    if (name.startsWith(KEPT_PREFIX) && join(dir, name) !== file) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        // another process's temp file or a vanished one: not ours to insist on
      }
    }
  }
  return file;
}

function load(file: string): object {
  const module = { exports: {} as object };
  process.dlopen(module, file);
  return module.exports;
}

/**
 * The loaded addon for better-sqlite3's `nativeBinding` option, or null from source.
 * `keepDir` is where a verified copy may be kept (the state directory).
 */
export function sqliteNativeBinding(keepDir?: string): object | null {
  if (addon !== undefined) return addon;
  const sea = seaAssets();
  if (sea === null) {
    addon = null;
    return addon;
  }
  const failures: string[] = [];
  if (keepDir !== undefined) {
    try {
      const file = keepSqliteAddon(keepDir);
      if (file !== null) {
        addon = load(file);
        return addon;
      }
    } catch (error) {
      failures.push(`${keepDir}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const bytes = new Uint8Array(sea.getRawAsset(SQLITE_ASSET));
  // A /tmp mounted noexec refuses to map code: then the executable's own directory.
  const places = [process.env.BERTH_NATIVE_DIR, tmpdir(), dirname(process.execPath)].filter(
    (p): p is string => typeof p === "string" && p !== "",
  );
  for (const place of places) {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(place, ".berth-agent-native-"));
      const file = join(dir, SQLITE_ASSET);
      writeFileSync(file, bytes, { mode: 0o700 });
      addon = load(file);
      return addon;
    } catch (error) {
      failures.push(`${place}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error(`cannot load the SQLite addon packed in this executable (${failures.join("; ")})`);
}
