// A deploy's add-on repositories as the dispatcher asks for them (modules/deployments/dispatch):
// a retry's or rollback's are those of the deployment it repeats (extra_data.addons, with the
// commits that one got); a new deploy takes the current ones and records them. The snapshot
// and the sealed keys stay this module's business.
import type { AddonRepository } from "@berth/protocol";
import type { AddonRepositoriesRepo, AddonSnapshotEntry } from "./addon-repositories.repo.ts";
import { commandEntries, snapshotEntry, snapshotOf } from "./addon-snapshots.ts";

/** What a deploy needs to know of its deployment row. */
export interface AddonDeployment {
  id: string;
  organizationId: string;
  environmentId: string;
  extraData: unknown;
}

export function createAddonDeploySource(deps: { repo: Pick<AddonRepositoriesRepo, "forDeploy" | "secrets" | "recordSnapshot">; masterKey: Buffer }) {
  return {
    async forDeploy(d: AddonDeployment): Promise<AddonRepository[]> {
      let entries: AddonSnapshotEntry[] | null = snapshotOf(((d.extraData ?? {}) as { addons?: unknown }).addons);
      if (entries === null) {
        entries = (await deps.repo.forDeploy(d.organizationId, d.environmentId)).map(snapshotEntry);
        await deps.repo.recordSnapshot(d.id, entries);
      }
      if (entries.length === 0) return [];
      return commandEntries(entries, await deps.repo.secrets(entries.map((e) => e.id)), deps.masterKey);
    },
  };
}
export type AddonDeploySource = ReturnType<typeof createAddonDeploySource>;
