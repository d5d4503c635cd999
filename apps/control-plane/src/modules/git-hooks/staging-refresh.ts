// A staging environment set to refresh on push (environments/stage-builds.ts refreshesOnPush):
// a push to its branch starts, instead of a plain deploy, a copy from the project's production
// (copy-from, backup "fresh": across servers through the backup store) that names the push's
// deploy, started once the copy succeeded (deployments/operations/operation-chains.ts). A copy
// that fails deploys nothing: the environment stays as it was, with its data and its release.
// With nothing to copy (no production, production or this environment never deployed) the push
// deploys as usual.
import { DomainError } from "../../lib/errors.ts";
import type { Scope } from "../../lib/scope.ts";
import type { CopyFrom } from "../environments/copy-from.ts";
import type { GitHooksRepo } from "./git-hooks.repo.ts";
import type { Push } from "./git-payload.ts";

export function createStagingRefresh(deps: { repo: Pick<GitHooksRepo, "productionOf">; copyFrom: Pick<CopyFrom, "copyFrom"> }) {
  return {
    /** The copy operation started for the push, or null when the push deploys as usual. */
    async start(scope: Scope & { projectId: string }, environmentId: string, push: Push & { branch: string }, gitPush: Record<string, unknown>) {
      const production = await deps.repo.productionOf(scope.projectId);
      if (!production || production.id === environmentId) return null;
      try {
        return await deps.copyFrom.copyFrom(
          scope,
          environmentId,
          { from_environment_id: production.id, backup: "fresh" },
          { userId: null, apiKeyId: null },
          { trigger: "git_push", then_deploy: { branch: push.branch, commit: push.commit, message: push.message }, git_push: gitPush },
        );
      } catch (err) {
        if (err instanceof DomainError && err.code === "copy_not_deployed") return null;
        throw err;
      }
    },
  };
}
export type StagingRefresh = ReturnType<typeof createStagingRefresh>;
