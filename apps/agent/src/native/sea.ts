// Whether this process is the single executable (installers/build) and, if so, the files
// packed inside it. Reached through process.getBuiltinModule, so running from source on any
// supported Node (and under test runners that know nothing of `node:sea`) needs nothing.
export interface SeaAssets {
  getRawAsset(key: string): ArrayBuffer;
  getAsset(key: string, encoding: string): string;
}

interface SeaModule extends SeaAssets {
  isSea(): boolean;
}

let cached: SeaAssets | null | undefined;

/** The executable's assets, or null when running from source (node/tsx). */
export function seaAssets(): SeaAssets | null {
  if (cached !== undefined) return cached;
  const get = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  let sea: SeaModule | undefined;
  try {
    sea = typeof get === "function" ? (get.call(process, "node:sea") as SeaModule | undefined) : undefined;
  } catch {
    sea = undefined;
  }
  cached = sea !== undefined && sea.isSea() ? sea : null;
  return cached;
}
