// Native addons packed in the single executable as assets (installers/build). A shared object
// can only be loaded from a file, so each is kept in the state directory under its SHA-256
// (embedded in the executable by the build), written by `enroll` and verified before every
// load. Reading an asset maps its pages of the executable into the process for good, so a
// daemon that finds its files never reads the assets. Where keeping is not possible (a build
// without the digests, a state directory on a noexec mount), the asset is written to a fresh
// private directory, loaded, and the file removed again at once (the mapping stays valid).
import { createHash } from "node:crypto";
import { closeSync, mkdtempSync, openSync, readdirSync, readSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { seaAssets } from "./sea.ts";
import { agentSetting } from "../config/settings.ts";

export const PACKED_ADDONS = ["berth_page_out.node"] as const;
export type PackedAddon = (typeof PACKED_ADDONS)[number];

/** Set by installers/build (esbuild define): each addon asset's SHA-256 in hex. */
declare const __BERTH_ADDON_SHA256__: Partial<Record<PackedAddon, string>> | undefined;
const DIGESTS: Partial<Record<PackedAddon, string>> = typeof __BERTH_ADDON_SHA256__ === "object" ? __BERTH_ADDON_SHA256__ : {};

const loaded = new Map<PackedAddon, object | null>();

const keptPrefix = (asset: PackedAddon) => `.native-${asset.replace(/\.node$/, "")}-`;

/** Where the executable keeps `asset` in `dir`, or null without a digest for it. */
export function keptAddonPath(dir: string, asset: PackedAddon): string | null {
  const sha256 = DIGESTS[asset];
  return sha256 === undefined ? null : join(dir, `${keptPrefix(asset)}${sha256.slice(0, 32)}.node`);
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
 * Writes `asset` into `dir` under its digest unless a verified copy is there, and removes
 * copies of other versions. Returns the file, or null when running from source or from a
 * build without the digest. Throws when `dir` cannot be written.
 */
export function keepPackedAddon(dir: string, asset: PackedAddon): string | null {
  const sea = seaAssets();
  const file = keptAddonPath(dir, asset);
  if (sea === null || file === null) return null;
  if (sha256Of(file) !== DIGESTS[asset]) {
    // Written aside and renamed: a daemon starting meanwhile sees the old file or the whole new one.
    const tmp = `${file}.${process.pid}.tmp`;
    rmSync(tmp, { force: true });
    writeFileSync(tmp, new Uint8Array(sea.getRawAsset(asset)), { mode: 0o500 });
    renameSync(tmp, file);
  }
  for (const name of readdirSync(dir)) {
    if (name.startsWith(keptPrefix(asset)) && join(dir, name) !== file) {
      try {
        unlinkSync(join(dir, name));
      } catch {
        // another process's temp file, or gone already
      }
    }
  }
  return file;
}

function dlopen(file: string): object {
  const module = { exports: {} as object };
  process.dlopen(module, file);
  return module.exports;
}

/**
 * The packed addon `asset`, loaded (once per process), or null when running from source.
 * `keepDir` is where a verified copy may be kept (the state directory).
 */
export function loadPackedAddon(asset: PackedAddon, keepDir?: string): object | null {
  const known = loaded.get(asset);
  if (known !== undefined) return known;
  const sea = seaAssets();
  if (sea === null) {
    loaded.set(asset, null);
    return null;
  }
  const failures: string[] = [];
  if (keepDir !== undefined) {
    try {
      const file = keepPackedAddon(keepDir, asset);
      if (file !== null) {
        const addon = dlopen(file);
        loaded.set(asset, addon);
        return addon;
      }
    } catch (error) {
      failures.push(`${keepDir}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const bytes = new Uint8Array(sea.getRawAsset(asset));
  // A /tmp mounted noexec refuses to map code: then the executable's own directory.
  const places = [agentSetting("nativeDir", process.env), tmpdir(), dirname(process.execPath)].filter(
    (p): p is string => typeof p === "string" && p !== "",
  );
  for (const place of places) {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(place, ".berth-agent-native-"));
      const file = join(dir, asset);
      writeFileSync(file, bytes, { mode: 0o700 });
      const addon = dlopen(file);
      loaded.set(asset, addon);
      return addon;
    } catch (error) {
      failures.push(`${place}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error(`cannot load ${asset}, packed in this executable (${failures.join("; ")})`);
}
