// Add-on repositories of the platform, an organisation or an environment: validated, their
// private access kept sealed (a deploy key generated here, whose public half is shown on
// every read for the user to add to their Git host; or a token, never shown again), and
// listed for a deploy (the dispatcher opens the secrets into the signed command only).
import { generateDeployKey, fingerprintOf } from "../../lib/deploy-keys.ts";
import { DomainError, notFound } from "../../lib/errors.ts";
import { seal } from "../../lib/master-key.ts";
import type { Clock } from "../../lib/clock.ts";
import {
  checkAccess,
  checkBranch,
  checkCommit,
  checkGitUrl,
  checkName,
  checkSubPaths,
  checkToken,
  MAX_ADDON_REPOSITORIES,
  nameFromUrl,
  type AccessKind,
} from "./addon-repositories-fns.ts";
import type { AddonRepositoriesRepo, AddonRepositoryRow, AddonRepositoryValues, AddonScope } from "./addon-repositories.repo.ts";

export interface AddonRepositoryInput {
  git_url: string;
  branch: string;
  name?: string | undefined;
  commit?: string | null | undefined;
  submodules?: boolean | undefined;
  sub_paths?: string[] | undefined;
  access?: AccessKind | undefined;
  token?: string | undefined;
  auto_deploy?: boolean | undefined;
}

export interface AddonRepositoryPatch extends Partial<AddonRepositoryInput> {
  /** A new deploy key replaces the current one (the old public key stops working once removed from the Git host). */
  regenerate_deploy_key?: boolean | undefined;
}

/** What the APIs show: never the private key or the token. */
export function addonRepositoryView(row: AddonRepositoryRow) {
  return {
    id: row.id,
    level: row.level as AddonScope["level"],
    organization_id: row.organizationId,
    environment_id: row.environmentId,
    name: row.name,
    git_url: row.gitUrl,
    branch: row.branch,
    commit: row.pinnedCommit,
    submodules: row.submodules,
    sub_paths: row.subPaths,
    access: row.access as AccessKind,
    deploy_key:
      row.access === "deploy_key" && row.deployKeyPublic
        ? { public_key: row.deployKeyPublic, fingerprint: fingerprintOf(row.deployKeyPublic) }
        : null,
    has_token: row.access === "token" && row.secretEnc !== null,
    auto_deploy: row.autoDeploy,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}
export type AddonRepositoryView = ReturnType<typeof addonRepositoryView>;

export function createAddonRepositoriesService(deps: {
  repo: Pick<AddonRepositoriesRepo, "list" | "get" | "create" | "update" | "remove">;
  masterKey: Buffer;
  clock: Clock;
}) {
  const keyFor = (name: string, scope: AddonScope) => {
    const key = generateDeployKey(`berth-${scope.level}-${name}`);
    return { deployKeyPublic: key.publicKey, secretEnc: seal(deps.masterKey, key.privateKey) };
  };

  async function existing(scope: AddonScope, id: string) {
    const row = await deps.repo.get(scope, id);
    if (!row) throw notFound("Add-on repository");
    return row;
  }

  return {
    async list(scope: AddonScope) {
      const rows = await deps.repo.list(scope);
      return { data: rows.map(addonRepositoryView), total: rows.length };
    },

    async get(scope: AddonScope, id: string) {
      return addonRepositoryView(await existing(scope, id));
    },

    async create(scope: AddonScope, input: AddonRepositoryInput) {
      const kind = checkGitUrl(input.git_url);
      checkBranch(input.branch);
      const commit = input.commit ?? null;
      checkCommit(commit);
      const name = input.name ?? nameFromUrl(input.git_url);
      checkName(name);
      const subPaths = checkSubPaths(input.sub_paths ?? []);
      const access = input.access ?? (input.token !== undefined ? "token" : "public");
      checkAccess(access, kind, input.token);
      if (access === "token") {
        if (input.token === undefined) throw new DomainError("addon_token_required", 'access "token" needs the token');
        checkToken(input.token);
      }
      const values: AddonRepositoryValues = {
        name,
        gitUrl: input.git_url,
        branch: input.branch,
        pinnedCommit: commit,
        submodules: input.submodules ?? false,
        subPaths,
        access,
        deployKeyPublic: null,
        secretEnc: null,
        autoDeploy: input.auto_deploy ?? true,
        ...(access === "deploy_key" ? keyFor(name, scope) : {}),
        ...(access === "token" ? { secretEnc: seal(deps.masterKey, input.token!) } : {}),
      };
      const row = await deps.repo.create(scope, values, MAX_ADDON_REPOSITORIES);
      if (!row) throw new DomainError("addon_repository_limit_reached", `At most ${MAX_ADDON_REPOSITORIES} add-on repositories per ${scope.level}; delete one first`);
      return addonRepositoryView(row);
    },

    async update(scope: AddonScope, id: string, patch: AddonRepositoryPatch) {
      const row = await existing(scope, id);
      const url = patch.git_url ?? row.gitUrl;
      const kind = checkGitUrl(url);
      if (patch.branch !== undefined) checkBranch(patch.branch);
      if (patch.commit !== undefined) checkCommit(patch.commit);
      if (patch.name !== undefined) checkName(patch.name);
      const access = patch.access ?? (patch.token !== undefined ? "token" : (row.access as AccessKind));
      checkAccess(access, kind, patch.token);
      const values: Partial<AddonRepositoryValues> = {};
      if (patch.git_url !== undefined) values.gitUrl = patch.git_url;
      if (patch.branch !== undefined) values.branch = patch.branch;
      if (patch.commit !== undefined) values.pinnedCommit = patch.commit;
      if (patch.name !== undefined) values.name = patch.name;
      if (patch.submodules !== undefined) values.submodules = patch.submodules;
      if (patch.sub_paths !== undefined) values.subPaths = checkSubPaths(patch.sub_paths);
      if (patch.auto_deploy !== undefined) values.autoDeploy = patch.auto_deploy;
      if (access === "public") Object.assign(values, { access, deployKeyPublic: null, secretEnc: null });
      if (access === "deploy_key") {
        if (row.access !== "deploy_key" || !row.deployKeyPublic || patch.regenerate_deploy_key === true) Object.assign(values, { access, ...keyFor(patch.name ?? row.name, scope) });
      } else if (patch.regenerate_deploy_key === true) {
        throw new DomainError("addon_access_mismatch", 'regenerate_deploy_key needs access "deploy_key"');
      }
      if (access === "token") {
        if (patch.token !== undefined) {
          checkToken(patch.token);
          Object.assign(values, { access, deployKeyPublic: null, secretEnc: seal(deps.masterKey, patch.token) });
        } else if (row.access !== "token") throw new DomainError("addon_token_required", 'access "token" needs the token');
      }
      const updated = await deps.repo.update(scope, id, values, deps.clock.now());
      if (!updated) throw notFound("Add-on repository");
      return addonRepositoryView(updated);
    },

    async remove(scope: AddonScope, id: string) {
      if (!(await deps.repo.remove(scope, id))) throw notFound("Add-on repository");
    },
  };
}
export type AddonRepositoriesService = ReturnType<typeof createAddonRepositoriesService>;
