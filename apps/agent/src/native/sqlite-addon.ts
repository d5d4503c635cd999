// better-sqlite3's native addon: from source, better-sqlite3 finds its own build in
// node_modules; the single executable carries it packed (packed-addons.ts).
import { loadPackedAddon } from "./packed-addons.ts";

/**
 * The loaded addon for better-sqlite3's `nativeBinding` option, or null from source.
 * `keepDir` is where the executable may keep a verified copy (the state directory).
 */
export function sqliteNativeBinding(keepDir?: string): object | null {
  return loadPackedAddon("better_sqlite3.node", keepDir);
}
