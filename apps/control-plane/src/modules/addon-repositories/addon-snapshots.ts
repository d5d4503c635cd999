// A deployment's add-on repositories: the snapshot kept in its extra_data.addons (names,
// URLs, branches, commits; no secrets), the signed command's addon_repositories made from it
// with the repositories' current keys or tokens opened, and the commits the agent reports.
import type { AddonRepository } from "@berth/protocol";
import { open } from "../../lib/master-key.ts";
import type { AddonRepositoryLevel, AddonRepositoryRow, AddonSnapshotEntry } from "./addon-repositories.repo.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const COMMIT = /^[0-9a-f]{7,64}$/;
const LEVELS = new Set<AddonRepositoryLevel>(["environment", "organization", "platform"]);

export function snapshotEntry(row: AddonRepositoryRow): AddonSnapshotEntry {
  return {
    id: row.id,
    level: row.level as AddonRepositoryLevel,
    name: row.name,
    url: row.gitUrl,
    branch: row.branch,
    commit: row.pinnedCommit,
    submodules: row.submodules,
    paths: row.subPaths,
  };
}

/** extra_data.addons as stored, kept only in the documented shape (null: the deployment has none recorded). */
export function snapshotOf(value: unknown): AddonSnapshotEntry[] | null {
  if (!Array.isArray(value)) return null;
  return value.flatMap((v: unknown) => {
    const e = (v ?? {}) as Record<string, unknown>;
    if (typeof e.id !== "string" || !UUID.test(e.id) || !LEVELS.has(e.level as AddonRepositoryLevel)) return [];
    if (typeof e.name !== "string" || typeof e.url !== "string" || typeof e.branch !== "string") return [];
    const commit = typeof e.commit === "string" && COMMIT.test(e.commit) ? e.commit : null;
    const paths = Array.isArray(e.paths) ? e.paths.filter((p): p is string => typeof p === "string") : [];
    return [{ id: e.id, level: e.level as AddonRepositoryLevel, name: e.name, url: e.url, branch: e.branch, commit, submodules: e.submodules === true, paths }];
  });
}

/** The command's entries: each with the repository's key or token as it is now (left out when it does not open or the repository is gone). */
export function commandEntries(entries: AddonSnapshotEntry[], secrets: Map<string, { access: string; secretEnc: string | null }>, masterKey: Buffer): AddonRepository[] {
  return entries.map((e) => {
    const out: AddonRepository = { id: e.id, level: e.level, name: e.name, url: e.url, branch: e.branch, commit: e.commit, submodules: e.submodules, paths: e.paths };
    const secret = secrets.get(e.id);
    if (secret?.secretEnc) {
      try {
        const value = open(masterKey, secret.secretEnc);
        if (secret.access === "deploy_key") out.ssh_private_key = value;
        else if (secret.access === "token") out.token = value;
      } catch {
        // sealed with another master key: the clone fails with the Git host's own answer
      }
    }
    return out;
  });
}

/** The agent's result.addon_repositories, kept only as {id, commit}. */
export function addonCommitsOf(value: unknown): { id: string; commit: string }[] {
  if (!Array.isArray(value)) return [];
  return value.slice(0, 100).flatMap((v: unknown) => {
    const e = (v ?? {}) as Record<string, unknown>;
    return typeof e.id === "string" && UUID.test(e.id) && typeof e.commit === "string" && COMMIT.test(e.commit) ? [{ id: e.id, commit: e.commit }] : [];
  });
}
