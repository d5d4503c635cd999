// The deploy command's parameters (deploy, redeploy, and rollback as a redeploy): the
// environment's image, code, resources, names and variables, the ERP's options and
// passwords, its add-on repositories and, until restored once, its migration's backup.
// What other modules own (images, credentials, add-ons, migration archives) comes through
// the narrow interfaces given at construction.
import type { AddonRepository, CommandParams, DeployParams, ProxySettings } from "@berth/protocol";
import { joinCredentials } from "../../../lib/git-credentials.ts";
import { open } from "../../../lib/master-key.ts";
import type { EnvironmentAddresses } from "../../environments/domains.ts";
import { catchesMail } from "../../mails/mail-rules.ts";
import { deployTestsOf, withoutDemoByDefault } from "../../environments/stage-builds.ts";
import { openSnapshot, sealedSnapshot } from "../../environments/variables.ts";
import type { ErpCredentials } from "../../environments/erp-credentials.ts";
import type { ErpImages } from "../../erp-images/erp-images.ts";
import type { DeploymentRow } from "../operations/operations.repo.ts";
import type { DispatchRepo } from "./dispatch.repo.ts";
import { DispatchError } from "./dispatch-error.ts";
import { storedOptions } from "./stored-options.ts";

export interface DeployParamsDeps {
  repo: Pick<DispatchRepo, "environmentWithProject">;
  images: Pick<ErpImages, "imageFor">;
  masterKey: Buffer;
  /** The environment's ERP master password, generated here if a deploy finds none. */
  credentials: Pick<ErpCredentials, "ensure" | "pendingLogin">;
  /** The host name a deploy routes: the environment's domain, else its generated name. */
  addresses: Pick<EnvironmentAddresses, "hostname">;
  /** The servers' reverse proxy; absent: the agent keeps the settings it has. */
  proxy?: ProxySettings;
  /** The deploy's add-on repositories (omitted when none, so an agent that predates the field still deploys); absent: none sent. */
  addons?: { forDeploy(d: DeploymentRow): Promise<AddonRepository[]> };
  /** A migration's backup for the deploy that restores it (the restore-once rule); absent: none sent. */
  migrationArchives?: { archiveFor(migrationId: string): Promise<DeployParams["archive"] | null> };
}

export function createDeployParams(deps: DeployParamsDeps) {
  /** The URL the agent clones: the stored one with its sealed credentials put back (none if they do not open). */
  function cloneUrl(project: { gitRepoUrl: string; gitRepoCredentialsEnc: string | null }): string {
    if (!project.gitRepoCredentialsEnc) return project.gitRepoUrl;
    try {
      return joinCredentials(project.gitRepoUrl, open(deps.masterKey, project.gitRepoCredentialsEnc));
    } catch {
      return project.gitRepoUrl; // sealed with another master key: the clone fails with the host's own answer
    }
  }

  /** The environment's master password, generated now if it has none; one that does not open fails the command. */
  async function masterPassword(environmentId: string) {
    try {
      return await deps.credentials.ensure(environmentId);
    } catch {
      throw new DispatchError(
        "secret_unreadable",
        "the environment's ERP master password does not open with this instance's master key (was BERTH_MASTER_KEY changed?): " +
          "rotate it (POST …/admin-password/rotate), then deploy again",
      );
    }
  }

  /**
   * The ERP's side of a deploy: the modules to upgrade and how a new database is initialised
   * (as the deployment was requested, kept in its extra_data; demo data by default in a
   * development environment), the module tests the stage asks for, the environment's master
   * password (generated now if it has none) and the administrator's login password to set.
   */
  async function erpParams(
    d: DeploymentRow,
    env: Parameters<typeof deployTestsOf>[0],
    options: ReturnType<typeof storedOptions>,
  ): Promise<Pick<DeployParams, "modules" | "init" | "tests" | "admin_passwd" | "admin_login">> {
    const password = await masterPassword(d.environmentId);
    // The administrator's login password, only while the database does not have it yet.
    const login = await deps.credentials.pendingLogin(d.environmentId);
    const tests = deployTestsOf(env);
    return {
      ...(options.modules ? { modules: options.modules } : {}),
      init: { without_demo: withoutDemoByDefault(env.stage), ...(options.init ?? {}) },
      // Omitted when none run, so an agent that predates the field still deploys production.
      ...(tests ? { tests } : {}),
      ...(password ? { admin_passwd: password.password } : {}),
      ...(login ? { admin_login: login } : {}),
    };
  }

  return async function deployParams(d: DeploymentRow): Promise<CommandParams<"deploy">> {
    const row = await deps.repo.environmentWithProject(d.environmentId);
    if (!row) throw new DispatchError("environment_missing", `environment ${d.environmentId} vanished`);
    const { env, project } = row;
    const image = await deps.images.imageFor(project.erpVersion);
    // Retry and rollback carry the configuration of the deployment they repeat; not the
    // domain: a rollback serves the environment at the names it has now.
    const options = storedOptions(d.extraData);
    const config = options.config;
    const erp = await erpParams(d, env, options);
    const addons = (await deps.addons?.forDeploy(d)) ?? [];
    // The restore-once rule (platform spec 4.3): until a deploy restored the migration's backup, every deploy restores it.
    const archive = env.migrationId !== null && !env.migrationRestoreCompleted ? await deps.migrationArchives?.archiveFor(env.migrationId) : null;
    return {
      deployment_id: d.id,
      environment_id: d.environmentId,
      ...erp,
      ...(addons.length > 0 ? { addon_repositories: addons } : {}),
      ...(archive ? { archive } : {}),
      erp_version: image.version,
      image: d.imageTag ?? image.image,
      db_image: image.db,
      git: project.gitRepoUrl ? { url: cloneUrl({ gitRepoUrl: project.gitRepoUrl, gitRepoCredentialsEnc: project.gitRepoCredentialsEnc }), branch: d.gitBranch ?? env.gitBranch, commit: d.gitCommit ?? null } : null,
      resources: config ? { cpu_cores: config.cpu_cores, ram_mb: config.ram_mb, disk_gb: config.disk_gb, workers: config.workers } : { cpu_cores: env.cpuCores, ram_mb: env.ramMb, disk_gb: env.diskGb, workers: env.workers },
      domain: deps.addresses.hostname(env),
      aliases: env.aliases,
      ...(deps.proxy ? { proxy: deps.proxy } : {}),
      // Omitted for production, so an agent that predates the field still deploys it.
      ...(catchesMail(env.stage) ? { catch_mail: true } : {}),
      // The variables of the configuration it runs with (a retry's or rollback's are its target's).
      env: openSnapshot(deps.masterKey, config ? (config.variables ?? {}) : sealedSnapshot(env.variables)),
    };
  };
}
