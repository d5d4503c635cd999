// Where the ERP finds add-ons: the folders that hold modules (a module is a folder with a
// __manifest__.py), found in the customer's checkout and in each add-on repository, in
// precedence order: the environment's own code first, then the environment's add-on
// repositories, then the organisation's, then the platform's; the image's own add-ons come
// last (Odoo appends its base add-ons itself). Odoo takes the first folder holding a module
// of a given name, so a module in a higher level overrides one of the same name below it.
import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { ADDON_REPOSITORY_LEVELS } from "@berth/protocol";
import { ADDON_REPOS_MOUNT, type AddonCheckout } from "./addon-repositories.ts";
import { scanAddons, type AddonModule } from "./erp-modules.ts";

/** Where the customer's own checkout is mounted (erp-config's historical addons_path). */
export const PROJECT_ADDONS_MOUNT = "/mnt/extra-addons";
/** How deep below a repository root (or sub-path) modules are looked for. */
export const MAX_DISCOVERY_DEPTH = 4;
const SKIPPED = new Set(["node_modules", "__pycache__", "setup", "venv", ".venv"]);

/** One addons_path entry: the folder on this server and the same folder in the container. */
export interface AddonsFolder {
  host: string;
  container: string;
}

async function isFile(path: string): Promise<boolean> {
  return stat(path).then(
    (s) => s.isFile(),
    () => false,
  );
}

/**
 * The folders holding modules at or below `root` (sorted): a root that is itself a module
 * gives its parent; a module's own subfolders are not searched; hidden folders are skipped.
 */
export async function discoverAddonFolders(root: string, maxDepth = MAX_DISCOVERY_DEPTH): Promise<string[]> {
  if (await isFile(join(root, "__manifest__.py"))) return [join(root, "..")];
  const found = new Set<string>();
  const walk = async (dir: string, depth: number): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    const subdirs = entries.filter((e) => e.isDirectory() && !e.name.startsWith(".") && !SKIPPED.has(e.name)).sort((a, b) => a.name.localeCompare(b.name));
    const deeper: string[] = [];
    for (const entry of subdirs) {
      const path = join(dir, entry.name);
      if (await isFile(join(path, "__manifest__.py"))) found.add(dir);
      else deeper.push(path);
    }
    if (depth < maxDepth) for (const path of deeper) await walk(path, depth + 1);
  };
  await walk(root, 1);
  return [...found].sort();
}

/**
 * The addons_path of a deploy, in precedence order. The customer's checkout always comes
 * first (at least its root, as before); each add-on repository contributes the folders
 * found under its sub-paths (or its root).
 */
export async function buildAddonsPath(projectDir: string, reposDir: string, checkouts: AddonCheckout[]): Promise<AddonsFolder[]> {
  const folders: AddonsFolder[] = [];
  const seen = new Set<string>();
  const add = (host: string, container: string) => {
    if (seen.has(container)) return;
    seen.add(container);
    folders.push({ host, container });
  };
  const project = await discoverAddonFolders(projectDir);
  add(projectDir, PROJECT_ADDONS_MOUNT);
  for (const dir of project) if (isInside(projectDir, dir)) add(dir, toContainer(projectDir, dir, PROJECT_ADDONS_MOUNT));
  const byLevel = [...checkouts].sort((a, b) => ADDON_REPOSITORY_LEVELS.indexOf(a.level) - ADDON_REPOSITORY_LEVELS.indexOf(b.level));
  for (const checkout of byLevel) {
    const root = join(reposDir, checkout.folder);
    const starts = checkout.paths.length > 0 ? checkout.paths.map((p) => join(root, p)) : [root];
    for (const start of starts) {
      for (const dir of await discoverAddonFolders(start)) {
        if (isInside(reposDir, dir)) add(dir, toContainer(reposDir, dir, ADDON_REPOS_MOUNT));
      }
    }
  }
  return folders;
}

function isInside(root: string, dir: string): boolean {
  const rel = relative(root, dir);
  return rel === "" || (!rel.startsWith("..") && !rel.startsWith("/"));
}

function toContainer(root: string, dir: string, mount: string): string {
  const rel = relative(root, dir);
  return rel === "" ? mount : `${mount}/${rel.split("\\").join("/")}`;
}

/** The modules of every folder, the first of a name winning (as Odoo's addons_path does). */
export async function scanAddonFolders(folders: AddonsFolder[], series: string): Promise<AddonModule[]> {
  const modules = new Map<string, AddonModule>();
  for (const folder of folders) {
    for (const module of await scanAddons(folder.host, series)) if (!modules.has(module.name)) modules.set(module.name, module);
  }
  return [...modules.values()];
}

/** The requirements.txt files at the root of the checkout and of each add-on repository, as the container sees them. */
export async function requirementFiles(projectDir: string, checkouts: AddonCheckout[]): Promise<string[]> {
  const files: string[] = [];
  if (await isFile(join(projectDir, "requirements.txt"))) files.push(`${PROJECT_ADDONS_MOUNT}/requirements.txt`);
  const byLevel = [...checkouts].sort((a, b) => ADDON_REPOSITORY_LEVELS.indexOf(a.level) - ADDON_REPOSITORY_LEVELS.indexOf(b.level));
  for (const checkout of byLevel) if (checkout.hasRequirements) files.push(`${ADDON_REPOS_MOUNT}/${checkout.folder}/requirements.txt`);
  return files;
}
