// Steps cloning_platform_repos, cloning_org_repos and cloning_repo: the add-on repositories
// of each level into a staging folder, then the project's repository; at the end of
// cloning_repo the staged set replaces the live one, and the addons_path and requirement
// files are worked out.
import { mkdir } from "node:fs/promises";
import type { StepScope } from "../../runner/step-runner.ts";
import { addonReposDir, knownHostsDir, stageAddonRepositories, type AddonCheckout, type AddonStaging } from "../addon-repositories.ts";
import { buildAddonsPath, requirementFiles, type AddonsFolder } from "../addons-path.ts";
import type { DeployContext } from "../deploy-context.ts";
import { checkoutRepository, emptyCheckout, redactUrl } from "../git-checkout.ts";

/** The code this deploy runs. */
export interface Code {
  /** The project repository's commit (null: no repository). */
  commit: string | null;
  addonCheckouts: AddonCheckout[];
  /** odoo.conf's addons_path, in precedence order. */
  addonsFolders: AddonsFolder[];
  requirementFiles: string[];
}

/** cloning_platform_repos: the staging folder, with the platform's repositories in it. */
export async function clonePlatformRepos(c: DeployContext, step: StepScope): Promise<{ summary: string; staging: AddonStaging }> {
  const staging = await stageAddonRepositories(addonReposDir(c.layout.dir), knownHostsDir(c.layout.dir));
  return { summary: await cloneAddonLevel(c, staging, "platform", step), staging };
}

/** cloning_org_repos. */
export async function cloneOrgRepos(c: DeployContext, staging: AddonStaging, step: StepScope): Promise<{ summary: string }> {
  return { summary: await cloneAddonLevel(c, staging, "organization", step) };
}

/** cloning_repo: the project's repository (or an empty checkout), then the environment's own add-on repositories. */
export async function cloneRepo(c: DeployContext, staging: AddonStaging, step: StepScope): Promise<Code & { summary: string }> {
  const { params, layout, timing } = c;
  if (params.git === null) {
    await emptyCheckout(layout.addonsDir, (dir) => mkdir(dir, { mode: 0o755 }).then(() => undefined));
    step.log("info", "No repository configured: the image runs as is (skipped)");
    const addons = await finishAddonCheckout(c, staging, step);
    return { summary: `Skipped: no repository${addons.extra}`, commit: null, ...addons.code };
  }
  const url = redactUrl(params.git.url);
  step.log("info", `Cloning ${url} (branch ${params.git.branch}${params.git.commit ? `, commit ${params.git.commit}` : ""})`);
  const checkout = await checkoutRepository(params.git, layout.addonsDir, { signal: step.signal, timeoutMs: timing.gitTimeoutMs });
  step.log("info", `Checked out commit ${checkout.commit}`, { commit: checkout.commit, branch: params.git.branch });
  const addons = await finishAddonCheckout(c, staging, step);
  return { summary: `Commit ${checkout.commit}${addons.extra}`, commit: checkout.commit, ...addons.code };
}

async function cloneAddonLevel({ params, timing }: DeployContext, staging: AddonStaging, level: "platform" | "organization", step: StepScope): Promise<string> {
  const repos = (params.addon_repositories ?? []).filter((r) => r.level === level);
  const what = level === "platform" ? "platform" : "organisation";
  if (repos.length === 0) {
    step.log("info", `No ${what} repositories configured`);
    return "None configured";
  }
  const done = await staging.clone(repos, { signal: step.signal, timeoutMs: timing.gitTimeoutMs, log: step.log });
  return `${done.length} ${what} repositor${done.length === 1 ? "y" : "ies"}: ${done.map((r) => `${r.name}@${r.commit.slice(0, 12)}`).join(", ")}`;
}

/** The environment's own add-on repositories, then the staged set replaces the live one. */
async function finishAddonCheckout(
  { params, layout, timing }: DeployContext,
  staging: AddonStaging,
  step: StepScope,
): Promise<{ code: Omit<Code, "commit">; extra: string }> {
  const own = (params.addon_repositories ?? []).filter((r) => r.level === "environment");
  try {
    if (own.length > 0) await staging.clone(own, { signal: step.signal, timeoutMs: timing.gitTimeoutMs, log: step.log });
    await staging.swapIn();
  } catch (error) {
    await staging.discard();
    throw error;
  }
  const addonCheckouts = staging.checkouts;
  // The staged folders moved: the checkouts' folders are relative, so they still hold.
  const addonsFolders = await buildAddonsPath(layout.addonsDir, addonReposDir(layout.dir), addonCheckouts);
  const files = await requirementFiles(layout.addonsDir, addonCheckouts);
  if (addonCheckouts.length > 0 || addonsFolders.length > 1) {
    step.log("info", `addons_path: ${addonsFolders.map((f) => f.container).join(",")}`, { addons_path: addonsFolders.map((f) => f.container) });
  }
  return {
    code: { addonCheckouts, addonsFolders, requirementFiles: files },
    extra: own.length > 0 ? `; ${own.length} environment add-on repositor${own.length === 1 ? "y" : "ies"}` : "",
  };
}
