// better-sqlite3's native addon. From source, better-sqlite3 finds its own build in
// node_modules. In the single executable it travels as an asset: a shared object can only be
// loaded from a file, so it is written to a fresh private directory, loaded, and the file
// removed again at once (the loaded mapping stays valid on Linux).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { seaAssets } from "./sea.ts";

export const SQLITE_ASSET = "better_sqlite3.node";

let addon: object | null | undefined;

/** The loaded addon for better-sqlite3's `nativeBinding` option, or null from source. */
export function sqliteNativeBinding(): object | null {
  if (addon !== undefined) return addon;
  const sea = seaAssets();
  if (sea === null) {
    addon = null;
    return addon;
  }
  const bytes = new Uint8Array(sea.getRawAsset(SQLITE_ASSET));
  // A /tmp mounted noexec refuses to map code: then the executable's own directory.
  const places = [process.env.BERTH_NATIVE_DIR, tmpdir(), dirname(process.execPath)].filter(
    (p): p is string => typeof p === "string" && p !== "",
  );
  const failures: string[] = [];
  for (const place of places) {
    let dir: string | undefined;
    try {
      dir = mkdtempSync(join(place, ".berth-agent-native-"));
      const file = join(dir, SQLITE_ASSET);
      writeFileSync(file, bytes, { mode: 0o700 });
      const module = { exports: {} as object };
      process.dlopen(module, file);
      addon = module.exports;
      return addon;
    } catch (error) {
      failures.push(`${place}: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    }
  }
  throw new Error(`cannot load the SQLite addon packed in this executable (${failures.join("; ")})`);
}
