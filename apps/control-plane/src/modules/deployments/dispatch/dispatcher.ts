// Turns an operation row into a signed command for the agent of its server. Called right
// after the row is written (fast path) and by the maintenance sweep (repair path, e.g.
// after a crash between the two); the unique deployment_id on the outbox makes a second
// dispatch of the same row a no-op.
import { isUniqueViolation } from "../../lib/errors.ts";
import { joinCredentials } from "../../lib/git-credentials.ts";
import { open } from "../../lib/master-key.ts";
import { COMMAND_TYPES, type CommandType, type ProxySettings } from "@berth/protocol";
import type { EnvironmentAddresses } from "../environments/domains.ts";
import { openSnapshot, sealedSnapshot } from "../environments/variables.ts";
import type { DispatchRepo } from "./dispatch.repo.ts";
import type { AgentCommands } from "../agents/agent-commands.ts";
import type { ErpImages } from "../erp-images/erp-images.ts";
import type { DeploymentRow } from "./deployments.repo.ts";
import type { ErpCredentials } from "../environments/erp-credentials.ts";
import type { AddonRepositoriesRepo, AddonSnapshotEntry } from "../addon-repositories/addon-repositories.repo.ts";
import { commandEntries, snapshotEntry, snapshotOf } from "../addon-repositories/addon-snapshots.ts";
import type { BackupTransfers } from "../backups/backup-transfers.ts";
import type { MigrationArchives } from "../migrations/migration-archive.ts";

/** How long a task may wait for an offline server before it fails (platform spec 8: 1800 s). */
export const DISPATCH_TTL_MS = 30 * 60 * 1000;


const COMMAND_FOR_KIND: Record<string, CommandType> = {
  deploy: "deploy",
  redeploy: "redeploy",
  rollback: "redeploy",
  restart: "restart",
  start: "start",
  stop: "stop",
  destroy: "destroy",
  backup: "backup",
  restore: "restore",
};

export function createDispatcher(deps: {
  repo: DispatchRepo;
  commands: Pick<AgentCommands, "issue">;
  images: ErpImages;
  masterKey: Buffer;
  /** The environment's ERP master password, generated here if a deploy finds none. */
  credentials: Pick<ErpCredentials, "ensure" | "pendingLogin">;
  /** The host name a deploy routes: the environment's domain, else its generated name. */
  addresses: Pick<EnvironmentAddresses, "hostname">;
  /** The servers' reverse proxy; absent: the agent keeps the settings it has. */
  proxy?: ProxySettings;
  /** Add-on repositories of the platform, organisations and environments; absent: none sent. */
  addonRepositories?: Pick<AddonRepositoriesRepo, "forDeploy" | "secrets" | "recordSnapshot">;
  /** Where a backup's files go and come from (the backup store); absent: they stay on the server. */
  backups?: Pick<BackupTransfers, "uploadParams" | "restoreSource">;
  /** A migration's backup for the deploy that restores it (the restore-once rule); absent: none sent. */
  migrationArchives?: Pick<MigrationArchives, "archiveFor">;
}) {
  /**
   * The deploy's add-on repositories: a retry's or rollback's are those of the deployment it
   * repeats (extra_data.addons, with the commits that one got); a new deploy takes the
   * current ones and records them. Omitted when there are none, so an agent that predates
   * the field keeps deploying environments without add-on repositories.
   */
  async function addonParams(d: DeploymentRow): Promise<Record<string, unknown>> {
    const repo = deps.addonRepositories;
    if (!repo) return {};
    let entries: AddonSnapshotEntry[] | null = snapshotOf(((d.extraData ?? {}) as { addons?: unknown }).addons);
    if (entries === null) {
      entries = (await repo.forDeploy(d.organizationId, d.environmentId)).map(snapshotEntry);
      await repo.recordSnapshot(d.id, entries);
    }
    if (entries.length === 0) return {};
    return { addon_repositories: commandEntries(entries, await repo.secrets(entries.map((e) => e.id)), deps.masterKey) };
  }

  /** The URL the agent clones: the stored one with its sealed credentials put back (none if they do not open). */
  function cloneUrl(project: { gitRepoUrl: string; gitRepoCredentialsEnc: string | null }): string {
    if (!project.gitRepoCredentialsEnc) return project.gitRepoUrl;
    try {
      return joinCredentials(project.gitRepoUrl, open(deps.masterKey, project.gitRepoCredentialsEnc));
    } catch {
      return project.gitRepoUrl; // sealed with another master key: the clone fails with the host's own answer
    }
  }


  /**
   * The ERP's side of a deploy: the modules to upgrade and how a new database is initialised
   * (as the deployment was requested, kept in its extra_data), the environment's master
   * password (generated now if it has none) and the administrator's login password to set.
   */
  async function erpParams(d: DeploymentRow): Promise<Record<string, unknown>> {
    const extra = (d.extraData ?? {}) as { modules?: unknown; init?: Record<string, unknown> };
    const password = await deps.credentials.ensure(d.environmentId);
    // The administrator's login password, only while the database does not have it yet.
    const login = await deps.credentials.pendingLogin(d.environmentId);
    return {
      ...(extra.modules ? { modules: extra.modules } : {}),
      init: { without_demo: true, ...(extra.init ?? {}) },
      ...(password ? { admin_passwd: password.password } : {}),
      ...(login ? { admin_login: login } : {}),
    };
  }

  /**
   * A restore of another environment's backup makes a copy: the agent neutralises it with the
   * image's own `odoo neutralize` and re-keys it (new uuid and secret, this environment's
   * address as web.base.url) before it serves. The environment's own backup comes back as it was.
   */
  async function copyOf(d: DeploymentRow, extra: Record<string, unknown>): Promise<{ copy?: { base_url: string | null } }> {
    if (typeof extra.source_environment_id !== "string" || extra.source_environment_id === d.environmentId) return {};
    const row = await deps.repo.environmentWithProject(d.environmentId);
    const host = row ? deps.addresses.hostname(row.env) : null;
    return { copy: { base_url: host ? `https://${host}` : null } };
  }

  async function paramsFor(d: DeploymentRow, type: CommandType): Promise<Record<string, unknown>> {
    const base = { deployment_id: d.id, environment_id: d.environmentId };
    if (type !== "deploy" && type !== "redeploy") {
      const extra = (d.extraData ?? {}) as Record<string, unknown>;
      if (type === "destroy") return { ...base, delete_data: extra.delete_data === true };
      if (type === "backup") {
        const upload = await deps.backups?.uploadParams(String(extra.backup_id));
        return { ...base, backup_id: String(extra.backup_id), ...(upload ? { upload } : {}) };
      }
      if (type === "restore") {
        const source = await deps.backups?.restoreSource(String(extra.backup_id));
        return { ...base, backup_id: String(extra.backup_id), ...(source ? { source } : {}), ...(await copyOf(d, extra)) };
      }
      return base;
    }
    const row = await deps.repo.environmentWithProject(d.environmentId);
    if (!row) throw new Error(`environment ${d.environmentId} vanished`);
    const { env, project } = row;
    const image = await deps.images.imageFor(project.erpVersion);
    // Retry and rollback carry the configuration of the deployment they repeat; not the
    // domain: a rollback serves the environment at the names it has now.
    const config = ((d.extraData ?? {}) as { config?: { cpu_cores: number; ram_mb: number; disk_gb: number; workers: number; variables?: Record<string, string> } }).config;
    const erp = await erpParams(d);
    const addons = await addonParams(d);
    // The restore-once rule (platform spec 4.3): until a deploy restored the migration's backup, every deploy restores it.
    const archive = env.migrationId !== null && !env.migrationRestoreCompleted ? await deps.migrationArchives?.archiveFor(env.migrationId) : null;
    return {
      ...base,
      ...erp,
      ...addons,
      ...(archive ? { archive } : {}),
      erp_version: image.version,
      image: d.imageTag ?? image.image,
      db_image: image.db,
      git: project.gitRepoUrl ? { url: cloneUrl({ gitRepoUrl: project.gitRepoUrl, gitRepoCredentialsEnc: project.gitRepoCredentialsEnc }), branch: d.gitBranch ?? env.gitBranch, commit: d.gitCommit ?? null } : null,
      resources: config ? { cpu_cores: config.cpu_cores, ram_mb: config.ram_mb, disk_gb: config.disk_gb, workers: config.workers } : { cpu_cores: env.cpuCores, ram_mb: env.ramMb, disk_gb: env.diskGb, workers: env.workers },
      domain: deps.addresses.hostname(env),
      aliases: env.aliases,
      ...(deps.proxy ? { proxy: deps.proxy } : {}),
      // The variables of the configuration it runs with (a retry's or rollback's are its target's).
      env: openSnapshot(deps.masterKey, config ? (config.variables ?? {}) : sealedSnapshot(env.variables)),
    };
  }

  async function dispatch(d: DeploymentRow, issuedBy: string): Promise<void> {
    const type = COMMAND_FOR_KIND[d.kind];
    if (!type || !COMMAND_TYPES.includes(type) || !d.serverId) return;
    try {
      await deps.commands.issue({
        organizationId: d.organizationId,
        serverId: d.serverId,
        type,
        params: await paramsFor(d, type),
        issuedBy,
        deploymentId: d.id,
        ttlMs: DISPATCH_TTL_MS,
      });
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
    }
  }

  return {
    dispatch,
    /**
     * An environment's names changed: its server's proxy takes them now (a signed `route`
     * command) instead of at the next deploy. Nothing is sent for an environment never
     * deployed (its first deploy routes it) or without a server; the agent leaves one that
     * is not deployed on its server alone.
     */
    async routeUpdate(env: { id: string; organizationId: string; serverId: string | null; status: string; name: string; domain: string | null; aliases: string[]; isActive: boolean }): Promise<void> {
      if (env.serverId === null || !env.isActive || env.status === "pending") return;
      await deps.commands.issue({
        organizationId: env.organizationId,
        serverId: env.serverId,
        type: "route",
        params: { environment_id: env.id, domain: deps.addresses.hostname(env), aliases: env.aliases, ...(deps.proxy ? { proxy: deps.proxy } : {}) },
        issuedBy: "system:domains",
        ttlMs: DISPATCH_TTL_MS,
      });
    },
    /** Waiting operations that have no command yet (a crash between write and dispatch). */
    async dispatchPending(): Promise<number> {
      const rows = await deps.repo.waitingWithoutCommand(500);
      for (const d of rows) await dispatch(d, d.triggeredBy ? `user:${d.triggeredBy}` : d.apiKeyId ? `api_key:${d.apiKeyId}` : "system:dispatcher");
      return rows.length;
    },
    /**
     * Fails operations whose command expired before the agent took it (server offline),
     * or that the agent refused. The environment is left as it was: nothing ran.
     */
    async failUndelivered(now: Date): Promise<number> {
      return (await deps.repo.failUndelivered(now, DISPATCH_TTL_MS / 60000)).length;
    },
  };
}
export type Dispatcher = ReturnType<typeof createDispatcher>;
